"""The shared storage arithmetic: deltas to log ranges, and inlining a cross-run base."""

from __future__ import annotations

import pytest

from durable_recall.errors import SnapshotChainError
from durable_recall.stores import SnapshotDelta
from durable_recall.stores._chain import Inherited, base_entries, resolve_delta


def delta(
    segments: list[tuple[int, int]],
    messages: list[str],
    *,
    index: int = 1,
    base_run_id: str | None = None,
    base_index: int | None = None,
) -> SnapshotDelta:
    return SnapshotDelta(
        run_id='r',
        index=index,
        step_index=0,
        state='complete',
        segments=segments,
        messages=messages,
        base_run_id=base_run_id,
        base_index=base_index,
    )


class TestResolve:
    def test_head_and_tail_copies_merge_into_ranges(self) -> None:
        # previous snapshot = log 0..5 and 8..10 (7 messages); keep position 0, positions 4..7, add 2 new
        resolved = resolve_delta(delta([(0, 1), (4, 7), (-1, 2)], ['a', 'b']), [(0, 5), (8, 10)], next_seq=10)
        assert resolved.ranges == [(0, 1), (4, 5), (8, 12)]
        assert resolved.size == 6

    def test_copy_past_the_end_is_refused(self) -> None:
        with pytest.raises(SnapshotChainError, match='copies positions 0..4 of a previous snapshot of 3'):
            resolve_delta(delta([(0, 4)], []), [(0, 3)], next_seq=3)

    def test_new_counts_must_match_the_messages(self) -> None:
        with pytest.raises(SnapshotChainError, match='names 2 new messages but carries 1'):
            resolve_delta(delta([(-1, 2)], ['a'], index=0), None, next_seq=0)


class TestBaseEntries:
    def test_takes_base_positions_in_order_then_the_new_messages(self) -> None:
        based = delta([(1, 3), (-1, 1)], ['new'], index=0, base_run_id='prev', base_index=2)
        assert base_entries(based, 3) == [Inherited(1), Inherited(2), 'new']

    def test_missing_base_is_an_error_not_a_silent_gap(self) -> None:
        based = delta([(0, 1)], [], index=0, base_run_id='prev', base_index=0)
        with pytest.raises(SnapshotChainError, match="run 'prev', which the store does not hold"):
            base_entries(based, None)

    def test_resolve_refuses_an_uninlined_base(self) -> None:
        with pytest.raises(SnapshotChainError, match='must be inlined'):
            resolve_delta(delta([(0, 1)], [], index=0, base_run_id='prev', base_index=0), None, next_seq=0)
