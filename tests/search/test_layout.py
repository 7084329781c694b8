"""The index's postings encoding: 16-bit values with an escape, and blobs that concatenate."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from durable_recall.index._layout import decode_postings, encode_postings

values = st.one_of(st.integers(0, 70), st.integers(0xFFF0, 0x1_0010), st.integers(0, 2**32 - 1))
triples = st.lists(st.tuples(values, values, values), max_size=20)


@given(first=triples, second=triples)
def test_round_trip_and_concatenation(first: list[tuple[int, int, int]], second: list[tuple[int, int, int]]) -> None:
    joined = encode_postings(first) + encode_postings(second)
    positions, tfs, lengths = decode_postings(joined)
    assert list(zip(positions, tfs, lengths, strict=True)) == first + second


def test_small_postings_take_six_bytes() -> None:
    assert len(encode_postings([(3, 1, 40)])) == 6
    assert len(encode_postings([(3, 1, 40), (9, 2, 41)])) == 12
    assert len(encode_postings([(70_000, 1, 40)])) == 10
