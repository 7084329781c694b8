"""Reference ranges in isolation: how inherited entries group into ranges, and how a read's rows become a log."""

from __future__ import annotations

from durable_recall.stores._log_refs import MAX_HOPS, BaseEntry, RefRange, reference_ranges, resolved_logs, spans


def entry(seq: int, owner: str, owner_seq: int, hops: int = 1) -> BaseEntry:
    return BaseEntry(seq, owner, owner_seq, hops)


def test_a_stretch_contiguous_in_both_logs_is_one_range_of_the_base_whatever_its_owners() -> None:
    inherited = [(1, entry(3, 'a', 20)), (2, entry(4, 'b', 20)), (3, entry(5, 'b', 22)), (4, entry(6, 'base', 6, 0))]
    assert reference_ranges('run', 'base', inherited) == [RefRange('run', 1, 4, 'base', 3)]


def test_ranges_break_where_either_log_skips() -> None:
    inherited = [(0, entry(5, 'a', 0)), (1, entry(6, 'a', 1)), (3, entry(7, 'a', 2)), (4, entry(9, 'a', 3))]
    assert reference_ranges('run', 'base', inherited) == [
        RefRange('run', 0, 2, 'base', 5),
        RefRange('run', 3, 1, 'base', 7),
        RefRange('run', 4, 1, 'base', 9),
    ]


def test_a_stretch_that_would_go_past_max_hops_names_the_owners() -> None:
    shallow = [(0, entry(0, 'a', 4, MAX_HOPS - 1)), (1, entry(1, 'a', 5, 2))]
    assert reference_ranges('run', 'base', shallow) == [RefRange('run', 0, 2, 'base', 0)]

    deep = [
        (0, entry(0, 'a', 4, MAX_HOPS)),
        (1, entry(1, 'a', 5, 2)),
        (2, entry(2, 'b', 0)),
        (3, entry(3, 'base', 3, 0)),
    ]
    assert reference_ranges('run', 'base', deep) == [
        RefRange('run', 0, 2, 'a', 4),
        RefRange('run', 2, 1, 'b', 0),
        RefRange('run', 3, 1, 'base', 3),
    ]


def test_a_covered_entry_without_a_body_is_none_and_an_uncovered_one_is_left_out() -> None:
    rows = [
        ('r', 0, None, 'zero'),
        ('r', 1, 4, None),
        ('r', 1, None, b'one'),
        ('r', 3, None, 'three'),
        ('s', 9, None, 'x'),
    ]
    assert resolved_logs(rows) == {'r': {0: 'zero', 1: b'one', 2: None, 3: 'three'}, 's': {9: 'x'}}


def test_spans_are_the_fewest_ranges() -> None:
    assert spans([5, 1, 2, 3, 3, 9, 8]) == [(1, 4), (5, 6), (8, 10)]
    assert spans([]) == []
