"""A small store holding every kind of row (runs, snapshots, bodies, inherited ranges), and a full read of it.

The reliability tests damage copies of it and read everything back through the public reads:
`read_all` turns each read into a comparable value, or the exception it raised, read by read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from durable_recall.base import Snapshot
from durable_recall.base._codec import dump_messages
from durable_recall.base._records import RunRegistration, SnapshotDelta
from durable_recall.stores import StepStore
from tests.stores._helpers import delta

BASE = datetime(2025, 1, 1, tzinfo=UTC)
RUNS = ('run-1', 'run-2', 'run-3')


def long_message(n: int, run: str) -> ModelMessage:
    """A message long enough to be stored compressed, distinct per run and number."""
    at = BASE + timedelta(seconds=n)
    text = f'{run} message {n}: ' + ' '.join(f'the export job {n} wrote part {k} to s3 bucket' for k in range(12))
    if n % 2 == 0:
        return ModelRequest(parts=[UserPromptPart(content=text, timestamp=at)], timestamp=at)
    return ModelResponse(parts=[TextPart(content=text)], model_name='test', timestamp=at)


def short_message(n: int) -> ModelMessage:
    at = BASE + timedelta(seconds=n)
    return ModelRequest(parts=[UserPromptPart(content=f'q{n}', timestamp=at)], timestamp=at)


async def populate(store: StepStore) -> None:
    """run-1: five snapshots of a growing history; run-2 continues it by reference; run-3 stands alone."""
    history: list[ModelMessage] = []
    previous: list[ModelMessage] = []
    await store.register_run(RunRegistration(run_id='run-1', conversation_id='conv', agent_name='a', token='t1'))
    for index in range(5):
        history = [*history, long_message(2 * index, 'run-1'), short_message(2 * index + 1)]
        state = 'interrupted' if index == 3 else 'complete'
        assert await store.save_snapshot(delta('run-1', index, previous, history, state=state))
        previous = history
    await store.register_run(
        RunRegistration(run_id='run-2', conversation_id='conv', parent_run_id='run-1', metadata={'k': 'v'}, token='t2')
    )
    extra = [long_message(100, 'run-2')]
    first = SnapshotDelta(
        run_id='run-2',
        index=0,
        step_index=0,
        state='complete',
        segments=[(0, len(history)), (-1, 1)],
        messages=dump_messages(extra),
        base_run_id='run-1',
        base_index=4,
    )
    assert await store.save_snapshot(first)
    second = [*history, *extra, long_message(101, 'run-2')]
    assert await store.save_snapshot(delta('run-2', 1, [*history, *extra], second))
    await store.register_run(RunRegistration(run_id='run-3', conversation_id=None, token='t3'))
    own = [long_message(200, 'run-3'), short_message(201)]
    assert await store.save_snapshot(delta('run-3', 0, [], own))


def _snapshots(snapshots: list[Snapshot]) -> list[tuple[Any, ...]]:
    return [
        (s.run_id, s.index, s.step_index, s.state, s.saved_at, dump_messages(s.messages), s.seqs) for s in snapshots
    ]


def _latest(snapshot: Snapshot | None) -> Any:
    return None if snapshot is None else _snapshots([snapshot])


async def _log(store: StepStore, run_id: str) -> dict[int, str]:
    found = await store.read_messages(run_id, list(range(40)))
    return {seq: dump_messages([message])[0] for seq, message in found.items()}


def reads(store: StepStore) -> dict[str, Callable[[], Awaitable[Any]]]:
    """Every public read of the store, by name, each giving a comparable value."""
    out: dict[str, Callable[[], Awaitable[Any]]] = {
        'list_runs': lambda: store.list_runs(),
        'list_conversations': lambda: store.list_conversations(),
        'get_runs': lambda: store.get_runs(list(RUNS)),
    }
    for run_id in RUNS:
        out[f'get_run {run_id}'] = lambda run_id=run_id: store.get_run(run_id)
        out[f'list_snapshots {run_id}'] = lambda run_id=run_id: _map(store.list_snapshots(run_id), _snapshots)
        out[f'list_snapshots all {run_id}'] = lambda run_id=run_id: _map(
            store.list_snapshots(run_id, include_interrupted=True), _snapshots
        )
        out[f'latest_snapshot {run_id}'] = lambda run_id=run_id: _map(
            store.latest_snapshot(run_id, include_interrupted=True), _latest
        )
        out[f'read_messages {run_id}'] = lambda run_id=run_id: _log(store, run_id)
    return out


async def _map(value: Awaitable[Any], convert: Callable[[Any], Any]) -> Any:
    return convert(await value)


async def read_all(store: StepStore) -> dict[str, tuple[str, Any]]:
    """Each read's outcome: `('value', value)` or `('error', exception)`."""
    outcomes: dict[str, tuple[str, Any]] = {}
    for name, read in reads(store).items():
        try:
            outcomes[name] = ('value', await read())
        except Exception as error:  # classified by the caller: a test of what reads may raise
            outcomes[name] = ('error', error)
    return outcomes
