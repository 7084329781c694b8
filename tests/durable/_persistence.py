"""Shared pieces of the durable persistence tests: the store, the counts, the conversation script."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from durable_recall import SqliteStepStore, StepStore

STORE_DIR = Path(tempfile.mkdtemp(prefix='durable-recall-durable-tests-'))
"""Module-level agents need their store at import; each test isolates itself by conversation id."""


def sqlite_store(name: str) -> SqliteStepStore:
    return SqliteStepStore(STORE_DIR / f'{name}.db')


@dataclass(frozen=True)
class RowCounts:
    runs: int
    snapshots: int
    messages: int


async def row_counts(store: StepStore, conversation_id: str) -> RowCounts:
    """What the store holds for one conversation, counted through the public API.

    `messages` counts distinct messages per run across all snapshots (including interrupted
    ones), which equals the run's log size when nothing is stored twice.
    """
    runs = await store.list_runs(conversation_id=conversation_id)
    snapshots = 0
    messages = 0
    for run in runs:
        stored = await store.list_snapshots(run.run_id, include_interrupted=True)
        snapshots += len(stored)
        from durable_recall.base._codec import dump_messages

        messages += len({body for snapshot in stored for body in dump_messages(snapshot.messages)})
    return RowCounts(runs=len(runs), snapshots=snapshots, messages=messages)


def prompts(turns: int) -> list[str]:
    return [f'turn {turn}' for turn in range(turns)]
