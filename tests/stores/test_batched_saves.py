"""`save_snapshots`: several deltas in one transaction, each checked as `save_snapshot` checks it."""

from __future__ import annotations

import pytest

from durable_recall.base import _errors
from durable_recall.base._codec import dump_messages
from durable_recall.base._records import Segment, SnapshotDelta
from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

from ._helpers import delta, messages, registration, save_history
from ._log_rows import clear_pending_marks, log_entries, pending_marks

pytestmark = pytest.mark.anyio


def raw(run_id: str, index: int, segments: list[Segment], new: list[int]) -> SnapshotDelta:
    """A hand-written delta whose new messages are `messages(*new)`."""
    return SnapshotDelta(
        run_id=run_id,
        index=index,
        step_index=index,
        state='complete',
        segments=segments,
        messages=dump_messages(messages(*new)),
    )


def grow(run_id: str, *sizes: int, start: int = 0, offset: int = 0) -> list[SnapshotDelta]:
    """Deltas `start, start + 1, ...` of a run whose snapshot `i` is `messages(offset, ..., offset + sizes[i] - 1)`."""
    history = [messages(*range(offset, offset + size)) for size in sizes]
    previous = history[start - 1] if start else []
    deltas: list[SnapshotDelta] = []
    for index in range(start, len(sizes)):
        deltas.append(delta(run_id, index, previous, history[index]))
        previous = history[index]
    return deltas


@pytest.fixture
async def two_runs(store: StepStore) -> None:
    for run_id in ('a', 'b'):
        await store.register_run(registration(run_id, conversation_id='c'))


async def test_an_empty_batch_stores_nothing(store: StepStore) -> None:
    assert await store.save_snapshots([]) == []


async def test_a_batch_of_two_runs_is_stored_in_order(kit: StoreKit, two_runs: None) -> None:
    store = kit.store
    a0, a1, a2 = grow('a', 1, 2, 3)
    (b0,) = grow('b', 2, offset=10)

    assert await store.save_snapshots([a0, a1, b0, a2]) == [True, True, True, True]

    assert [s.messages for s in await store.list_snapshots('a')] == [messages(0), messages(0, 1), messages(0, 1, 2)]
    assert [s.messages for s in await store.list_snapshots('b')] == [messages(10, 11)]
    assert (await kit.log_size('a'), await kit.log_size('b')) == (3, 2)
    assert await pending_marks(kit) == {'a': 2, 'b': 0}


async def test_a_delta_may_build_on_a_snapshot_saved_earlier_in_the_batch(kit: StoreKit, two_runs: None) -> None:
    store = kit.store
    a0, a1 = grow('a', 1, 2)
    b0 = SnapshotDelta(
        run_id='b',
        index=0,
        step_index=0,
        state='complete',
        segments=[(0, 2), (-1, 1)],
        messages=dump_messages(messages(5)),
        base_run_id='a',
        base_index=1,
    )

    assert await store.save_snapshots([a0, a1, b0]) == [True, True, True]

    assert [s.messages for s in await store.list_snapshots('b')] == [messages(0, 1, 5)]
    assert (await log_entries(kit, 'b'))[:2] == [('ref', 'a', 0), ('ref', 'a', 1)]


def _third(case: str) -> SnapshotDelta:
    if case == 'index-gap':
        return raw('a', 5, [(-1, 1)], [9])
    if case == 'copy-past-end':
        return raw('b', 1, [(0, 9)], [])
    if case == 'unregistered-run':
        return raw('ghost', 0, [(-1, 1)], [9])
    return SnapshotDelta(
        run_id='fresh',
        index=0,
        step_index=0,
        state='complete',
        segments=[(0, 1)],
        messages=[],
        base_run_id='a',
        base_index=7,
    )


@pytest.mark.parametrize('case', ['index-gap', 'copy-past-end', 'unregistered-run', 'missing-base'])
async def test_a_refused_third_delta_leaves_nothing_of_the_batch(kit: StoreKit, two_runs: None, case: str) -> None:
    store = kit.store
    await store.register_run(registration('fresh', conversation_id='c'))
    await save_history(store, 'a', [messages(0)])
    await clear_pending_marks(kit)
    before = await store.list_snapshots('a')
    (a1,) = grow('a', 1, 2, start=1)
    (b0,) = grow('b', 2, offset=10)

    with pytest.raises(_errors.SnapshotChainError):
        await store.save_snapshots([a1, b0, _third(case)])

    assert await store.list_snapshots('a') == before
    assert await store.list_snapshots('b') == []
    assert await store.list_snapshots('fresh') == []
    assert (await kit.log_size('a'), await kit.log_size('b'), await kit.log_size('fresh')) == (1, 0, 0)
    assert await pending_marks(kit) == {}
    # Nothing was taken: the same deltas are new afterwards.
    assert await store.save_snapshots([a1, b0]) == [True, True]
    assert [s.messages for s in await store.list_snapshots('a')] == [messages(0), messages(0, 1)]


async def test_a_batch_saved_again_changes_nothing(kit: StoreKit, two_runs: None) -> None:
    store = kit.store
    a0, a1 = grow('a', 1, 2)
    (b0,) = grow('b', 2, offset=10)
    assert await store.save_snapshots([a0, a1, b0]) == [True, True, True]
    await clear_pending_marks(kit)
    before = [await store.list_snapshots(run_id) for run_id in ('a', 'b')]
    sizes = (await kit.log_size('a'), await kit.log_size('b'))

    # A retry or replay of the same batch, even with other content under the stored indexes.
    assert await store.save_snapshots([a0, a1, b0]) == [False, False, False]
    assert await store.save_snapshots([raw('a', 1, [(-1, 1)], [99]), raw('b', 0, [(-1, 1)], [99])]) == [False, False]

    assert [await store.list_snapshots(run_id) for run_id in ('a', 'b')] == before
    assert (await kit.log_size('a'), await kit.log_size('b')) == sizes
    assert await pending_marks(kit) == {}


async def test_a_batch_overlapping_what_is_stored_saves_only_the_new_deltas(kit: StoreKit, two_runs: None) -> None:
    store = kit.store
    a0, a1, a2 = grow('a', 1, 2, 3)
    b0, b1 = grow('b', 1, 2, offset=10)
    assert await store.save_snapshots([a0, a1, b0]) == [True, True, True]
    await clear_pending_marks(kit)

    assert await store.save_snapshots([a1, a2, b0, b1]) == [False, True, False, True]

    assert [s.messages for s in await store.list_snapshots('a')][-1] == messages(0, 1, 2)
    assert [s.messages for s in await store.list_snapshots('b')] == [messages(10), messages(10, 11)]
    assert (await kit.log_size('a'), await kit.log_size('b')) == (3, 2)
    assert await pending_marks(kit) == {'a': 2, 'b': 1}


async def test_a_delta_repeated_within_a_batch_is_stored_once(kit: StoreKit, two_runs: None) -> None:
    store = kit.store
    a0, a1 = grow('a', 1, 2)

    assert await store.save_snapshots([a0, a0, a1, a1]) == [True, False, True, False]
    assert await kit.log_size('a') == 2
