"""Snapshot chains: deltas in, whole histories out, on every store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from durable_recall.base import _errors
from durable_recall.base._codec import dump_messages
from durable_recall.base._records import Segment, SnapshotDelta, SnapshotState
from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

from ._helpers import delta, message, messages, registration, save_history

pytestmark = pytest.mark.anyio


def raw(
    run_id: str,
    index: int,
    segments: list[Segment],
    new: list[int],
    *,
    state: SnapshotState = 'complete',
    step_index: int = 0,
) -> SnapshotDelta:
    """A hand-written delta whose new messages are `message(n)` for each `n` in `new`."""
    return SnapshotDelta(
        run_id=run_id,
        index=index,
        step_index=step_index,
        state=state,
        segments=segments,
        messages=dump_messages(messages(*new)),
    )


@pytest.fixture
async def run_id(store: StepStore) -> str:
    await store.register_run(registration('run-1'))
    return 'run-1'


async def test_first_snapshot(store: StepStore, run_id: str) -> None:
    before = datetime.now(UTC)
    assert await store.save_snapshot(raw(run_id, 0, [(-1, 3)], [0, 1, 2], step_index=4))
    after = datetime.now(UTC)

    [snapshot] = await store.list_snapshots(run_id)
    assert (snapshot.run_id, snapshot.index, snapshot.step_index, snapshot.state) == (run_id, 0, 4, 'complete')
    assert snapshot.messages == messages(0, 1, 2)
    assert before <= snapshot.saved_at <= after
    assert await store.latest_snapshot(run_id) == snapshot


async def test_growing_history(store: StepStore, run_id: str) -> None:
    history = [messages(*range(n)) for n in (1, 3, 4, 6, 9)]

    await save_history(store, run_id, history)

    assert [s.messages for s in await store.list_snapshots(run_id)] == history
    assert [s.index for s in await store.list_snapshots(run_id)] == [0, 1, 2, 3, 4]


async def test_sliding_window_copies_from_the_middle(kit: StoreKit, run_id: str) -> None:
    store = kit.store
    assert await store.save_snapshot(raw(run_id, 0, [(-1, 6)], [0, 1, 2, 3, 4, 5]))
    # Keep the head, drop 1..2, keep 3..5, add 6 and 7.
    assert await store.save_snapshot(raw(run_id, 1, [(0, 1), (3, 6), (-1, 2)], [6, 7]))
    # Copy from the middle of a snapshot that is itself assembled from two log ranges.
    assert await store.save_snapshot(raw(run_id, 2, [(0, 1), (2, 5), (-1, 1)], [8]))

    assert [s.messages for s in await store.list_snapshots(run_id)] == [
        messages(0, 1, 2, 3, 4, 5),
        messages(0, 3, 4, 5, 6, 7),
        messages(0, 4, 5, 6, 8),
    ]
    assert await kit.log_size(run_id) == 9


async def test_deltas_may_repeat_and_reorder_positions(store: StepStore, run_id: str) -> None:
    assert await store.save_snapshot(raw(run_id, 0, [(-1, 3)], [0, 1, 2]))
    assert await store.save_snapshot(raw(run_id, 1, [(0, 2), (0, 2), (2, 3), (1, 2)], []))
    assert await store.save_snapshot(raw(run_id, 2, [(-1, 1), (3, 6), (-1, 1), (0, 1)], [3, 4]))

    assert [s.messages for s in await store.list_snapshots(run_id)] == [
        messages(0, 1, 2),
        messages(0, 1, 0, 1, 2, 1),
        messages(3, 1, 2, 1, 4, 0),
    ]


async def test_empty_snapshots(store: StepStore, run_id: str) -> None:
    assert await store.save_snapshot(raw(run_id, 0, [], []))
    assert await store.save_snapshot(raw(run_id, 1, [(-1, 2)], [0, 1]))
    assert await store.save_snapshot(raw(run_id, 2, [], []))
    assert await store.save_snapshot(raw(run_id, 3, [(-1, 1)], [2]))

    assert [s.messages for s in await store.list_snapshots(run_id)] == [[], messages(0, 1), [], messages(2)]


async def test_interrupted_snapshots_are_hidden_unless_asked_for(store: StepStore, run_id: str) -> None:
    states: list[SnapshotState] = ['complete', 'interrupted', 'complete', 'interrupted']
    previous: list[int] = []
    for index, state in enumerate(states):
        current = [*previous, index]
        assert await store.save_snapshot(delta(run_id, index, messages(*previous), messages(*current), state=state))
        previous = current

    assert [s.index for s in await store.list_snapshots(run_id)] == [0, 2]
    assert [s.index for s in await store.list_snapshots(run_id, include_interrupted=True)] == [0, 1, 2, 3]
    assert [s.state for s in await store.list_snapshots(run_id, include_interrupted=True)] == states
    latest = await store.latest_snapshot(run_id)
    assert latest is not None
    assert (latest.index, latest.messages) == (2, messages(0, 1, 2))
    latest = await store.latest_snapshot(run_id, include_interrupted=True)
    assert latest is not None
    assert (latest.index, latest.messages) == (3, messages(0, 1, 2, 3))


async def test_only_interrupted_snapshots(store: StepStore, run_id: str) -> None:
    assert await store.save_snapshot(raw(run_id, 0, [(-1, 1)], [0], state='interrupted'))

    assert await store.list_snapshots(run_id) == []
    assert await store.latest_snapshot(run_id) is None
    assert [s.index for s in await store.list_snapshots(run_id, include_interrupted=True)] == [0]


async def test_reading_runs_without_snapshots(store: StepStore, run_id: str) -> None:
    assert await store.list_snapshots(run_id) == []
    assert await store.latest_snapshot(run_id, include_interrupted=True) is None
    assert await store.list_snapshots('never-registered') == []
    assert await store.latest_snapshot('never-registered') is None


async def test_saving_an_index_again_changes_nothing(kit: StoreKit, run_id: str) -> None:
    store = kit.store
    await save_history(store, run_id, [messages(0, 1), messages(0, 1, 2)])
    before = await store.list_snapshots(run_id, include_interrupted=True)
    log_before = await kit.log_size(run_id)

    assert not await store.save_snapshot(delta(run_id, 1, messages(0, 1), messages(0, 1, 2)))
    assert not await store.save_snapshot(raw(run_id, 1, [(-1, 2)], [7, 8], state='interrupted', step_index=9))
    assert not await store.save_snapshot(raw(run_id, 0, [(-1, 1)], [9]))

    assert await store.list_snapshots(run_id, include_interrupted=True) == before
    assert await kit.log_size(run_id) == log_before


async def test_an_index_past_the_next_one_is_refused(kit: StoreKit, run_id: str) -> None:
    store = kit.store
    with pytest.raises(_errors.SnapshotChainError, match='follows snapshot -1'):
        await store.save_snapshot(raw(run_id, 1, [(-1, 1)], [0]))
    await save_history(store, run_id, [messages(0)])
    before = await store.list_snapshots(run_id)

    with pytest.raises(_errors.SnapshotChainError, match='snapshot 2 .* follows snapshot 0'):
        await store.save_snapshot(raw(run_id, 2, [(0, 1), (-1, 1)], [1]))

    assert await store.list_snapshots(run_id) == before
    assert await kit.log_size(run_id) == 1


async def test_an_unregistered_run_is_refused(store: StepStore) -> None:
    with pytest.raises(_errors.SnapshotChainError, match='not registered'):
        await store.save_snapshot(raw('ghost', 0, [(-1, 1)], [0]))

    assert await store.get_run('ghost') is None
    assert await store.list_snapshots('ghost', include_interrupted=True) == []


@pytest.mark.parametrize(
    ('segments', 'new', 'error'),
    [
        pytest.param([(0, 4)], [], 'copies positions 0..4 of a previous snapshot of 3', id='copy-past-end'),
        pytest.param([(2, 2)], [], 'copies positions 2..2', id='empty-copy'),
        pytest.param([(2, 1)], [], 'copies positions 2..1', id='reversed-copy'),
        pytest.param([(-1, 0)], [], 'empty new segment', id='empty-new-segment'),
        pytest.param([(-1, 2)], [5], 'names 2 new messages but carries 1', id='too-few-messages'),
        pytest.param([(0, 1)], [5], 'names 0 new messages but carries 1', id='unclaimed-message'),
    ],
)
async def test_bad_segments_are_refused_and_lose_nothing(
    kit: StoreKit, run_id: str, segments: list[Segment], new: list[int], error: str
) -> None:
    store = kit.store
    await save_history(store, run_id, [messages(0, 1, 2)])
    before = await store.list_snapshots(run_id)

    with pytest.raises(_errors.SnapshotChainError, match=error):
        await store.save_snapshot(raw(run_id, 1, segments, new))

    assert await store.list_snapshots(run_id) == before
    assert await kit.log_size(run_id) == 3
    # The refused index is still free.
    assert await store.save_snapshot(raw(run_id, 1, [(0, 3), (-1, 1)], [3]))
    assert (await store.list_snapshots(run_id))[-1].messages == messages(0, 1, 2, 3)


async def test_a_first_snapshot_cannot_copy(store: StepStore, run_id: str) -> None:
    with pytest.raises(_errors.SnapshotChainError, match='previous snapshot of 0 messages'):
        await store.save_snapshot(raw(run_id, 0, [(0, 1)], []))

    assert await store.list_snapshots(run_id, include_interrupted=True) == []


async def test_storage_is_linear_under_a_sliding_window(kit: StoreKit, run_id: str) -> None:
    """30 steps of a head-plus-window history store each message once, and O(1) ranges per step."""
    store = kit.store
    window = 6
    history: list[list[int]] = []
    conversation = [0]
    for step in range(30):
        conversation += [2 * step + 1, 2 * step + 2]
        history.append([conversation[0], *conversation[1:][-window:]])

    await save_history(store, run_id, [messages(*numbers) for numbers in history])

    assert await kit.log_size(run_id) == len(conversation) == 61
    ranges = await kit.stored_ranges(run_id)
    assert len(ranges) == 30
    assert max(len(r) for r in ranges) <= 2
    assert ranges[-1] == [(0, 1), (55, 61)]
    snapshots = await store.list_snapshots(run_id)
    assert [s.messages for s in snapshots] == [messages(*numbers) for numbers in history]
    latest = await store.latest_snapshot(run_id)
    assert latest is not None
    assert latest.messages == messages(0, *range(55, 61))


async def test_snapshots_of_runs_do_not_mix(store: StepStore) -> None:
    for run_id in ('run-a', 'run-b'):
        await store.register_run(registration(run_id))
    await save_history(store, 'run-a', [messages(0), messages(0, 1)])
    await save_history(store, 'run-b', [messages(10, 11, 12)])

    assert [s.messages for s in await store.list_snapshots('run-a')] == [messages(0), messages(0, 1)]
    assert [s.messages for s in await store.list_snapshots('run-b')] == [messages(10, 11, 12)]
    latest = await store.latest_snapshot('run-b')
    assert latest is not None
    assert latest.messages == [message(10), message(11), message(12)]


def based(
    run_id: str, base_run_id: str, base_index: int | None, segments: list[Segment], new: list[int]
) -> SnapshotDelta:
    """A first delta that copies from another run's snapshot."""
    return SnapshotDelta(
        run_id=run_id,
        index=0,
        step_index=0,
        state='complete',
        segments=segments,
        messages=dump_messages(messages(*new)),
        base_run_id=base_run_id,
        base_index=base_index,
    )


async def test_a_first_snapshot_may_build_on_another_run(kit: StoreKit) -> None:
    store = kit.store
    await store.register_run(registration('parent', conversation_id='old'))
    await store.register_run(registration('child', conversation_id='new'))
    await save_history(store, 'parent', [messages(0, 1), messages(0, 1, 2, 3)])

    assert await store.save_snapshot(based('child', 'parent', 1, [(1, 3), (-1, 1), (0, 1)], [9]))
    assert not await store.save_snapshot(based('child', 'parent', 1, [(-1, 1)], [8]))

    expected = messages(1, 2, 9, 0)
    assert [s.messages for s in await store.list_snapshots('child')] == [expected]
    # The child owns copies of what it inherited, so the parent's conversation can go.
    assert await kit.log_size('child') == 4
    assert await store.delete_conversation('old') == 1
    latest = await store.latest_snapshot('child')
    assert latest is not None
    assert latest.messages == expected
    assert await store.save_snapshot(raw('child', 1, [(0, 4), (-1, 1)], [10]))
    assert (await store.list_snapshots('child'))[-1].messages == [*expected, message(10)]


@pytest.mark.parametrize(
    ('base_run_id', 'base_index', 'segments', 'error'),
    [
        pytest.param('parent', 5, [(0, 1)], 'which the store does not hold', id='missing-index'),
        pytest.param('parent', None, [(0, 1)], 'which the store does not hold', id='no-index'),
        pytest.param('nobody', 0, [(0, 1)], 'which the store does not hold', id='missing-run'),
        pytest.param('parent', 0, [(0, 3)], 'copies positions 0..3 of a base snapshot of 2', id='past-end'),
    ],
)
async def test_a_missing_or_short_base_is_refused(
    store: StepStore, base_run_id: str, base_index: int | None, segments: list[Segment], error: str
) -> None:
    await store.register_run(registration('parent'))
    await store.register_run(registration('child'))
    await save_history(store, 'parent', [messages(0, 1)])

    with pytest.raises(_errors.SnapshotChainError, match=error):
        await store.save_snapshot(based('child', base_run_id, base_index, segments, []))

    assert await store.list_snapshots('child', include_interrupted=True) == []


async def test_only_a_first_snapshot_may_have_a_base(store: StepStore) -> None:
    await store.register_run(registration('parent'))
    await store.register_run(registration('child'))
    await save_history(store, 'parent', [messages(0, 1)])
    await save_history(store, 'child', [messages(5)])
    later = SnapshotDelta(
        run_id='child',
        index=1,
        step_index=1,
        state='complete',
        segments=[(0, 1)],
        messages=[],
        base_run_id='parent',
        base_index=0,
    )

    with pytest.raises(_errors.SnapshotChainError, match='only a first snapshot may have a base'):
        await store.save_snapshot(later)

    assert [s.messages for s in await store.list_snapshots('child')] == [messages(5)]


async def test_after_lists_only_snapshots_saved_since_a_watermark(store: StepStore) -> None:
    await store.register_run(registration('run-w'))
    history = [messages(0), messages(0, 1), messages(0, 1, 2), messages(1, 2, 3)]
    await save_history(store, 'run-w', history)
    later = await store.list_snapshots('run-w', after=1)
    assert [(s.index, s.messages) for s in later] == [(2, history[2]), (3, history[3])]
    assert await store.list_snapshots('run-w', after=3) == []
    assert [s.index for s in await store.list_snapshots('run-w', after=-1)] == [0, 1, 2, 3]
