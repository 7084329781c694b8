"""Random edit sequences, stored as deltas, read back exactly (property test on every store)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_recall.base._records import SnapshotState
from durable_recall.stores import StepStore

from ._helpers import delta, messages, registration

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Edit:
    """One step's change to the history: what a compaction or a turn does to it."""

    kind: str
    a: int
    b: int
    state: SnapshotState


edits = st.builds(
    Edit,
    kind=st.sampled_from(['append', 'drop_prefix', 'head_and_tail', 'replace', 'repeat']),
    a=st.integers(0, 4),
    b=st.integers(0, 4),
    state=st.sampled_from(['complete', 'complete', 'interrupted']),
)


def apply(history: list[int], edit: Edit, fresh: list[int]) -> list[int]:
    """The history after `edit`; `fresh` hands out message numbers never used before."""

    def new(count: int) -> list[int]:
        return [fresh.pop() for _ in range(count)]

    if edit.kind == 'append':
        return [*history, *new(edit.a + 1)]
    if edit.kind == 'drop_prefix':
        return history[edit.a :]
    if edit.kind == 'head_and_tail':
        return [*history[: edit.a], *history[len(history) - edit.b :]] if edit.b < len(history) else history
    if edit.kind == 'replace':
        if not history:
            return new(1)
        position = edit.a % len(history)
        return [*history[:position], *new(1), *history[position + 1 :]]
    return [*history, *history[edit.a : edit.a + edit.b]]  # repeat a slice


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(edits, min_size=1, max_size=10))
async def test_random_edit_sequences_read_back_exactly(store: StepStore, steps: list[Edit]) -> None:
    run_id = f'run-{uuid.uuid4().hex}'
    await store.register_run(registration(run_id))
    fresh = list(range(1000, 0, -1))
    history: list[int] = []
    saved: list[tuple[SnapshotState, list[int]]] = []
    for index, edit in enumerate(steps):
        current = apply(history, edit, fresh)
        assert await store.save_snapshot(delta(run_id, index, messages(*history), messages(*current), state=edit.state))
        saved.append((edit.state, current))
        history = current

    snapshots = await store.list_snapshots(run_id, include_interrupted=True)
    assert [(s.state, s.messages) for s in snapshots] == [(state, messages(*n)) for state, n in saved]
    assert [s.messages for s in await store.list_snapshots(run_id)] == [
        messages(*n) for state, n in saved if state == 'complete'
    ]
    latest = await store.latest_snapshot(run_id, include_interrupted=True)
    assert latest is not None
    assert latest.messages == messages(*saved[-1][1])
