"""The index's packed per-position arrays: exact round trips, narrow widths, damage refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from durable_recall.index._layout import array_length, decode_floats, decode_ints, encode_floats, encode_ints


@given(st.lists(st.integers(min_value=0, max_value=2**32 - 1), max_size=300))
def test_ints_round_trip(values: list[int]) -> None:
    packed = encode_ints(values)
    assert list(decode_ints(packed)) == values
    assert array_length(packed) == len(values)


@given(st.lists(st.floats(allow_nan=False), max_size=300))
def test_floats_round_trip_bit_for_bit(values: list[float]) -> None:
    packed = encode_floats(values)
    assert list(decode_floats(packed)) == values
    assert array_length(packed) == len(values)


def test_empty_arrays_are_empty_bytes() -> None:
    assert encode_ints([]) == encode_floats([]) == b''
    assert list(decode_ints(b'')) == list(decode_floats(b'')) == []
    assert array_length(b'') == 0


@pytest.mark.parametrize(('top', 'width'), [(255, 1), (256, 2), (65_535, 2), (65_536, 4)])
def test_ints_take_the_narrowest_width_that_holds_them(top: int, width: int) -> None:
    assert decode_ints(encode_ints([0, top])).itemsize == width


def test_a_chat_runs_arrays_take_a_fraction_of_their_fixed_width() -> None:
    # A chat run: 20 inherited positions (no postings of their own), two new ones.
    lengths = [0] * 20 + [23, 41]
    seqs = list(range(22))
    times = [1_767_610_817.0 + 7 * k for k in range(22)]
    packed = len(encode_ints(lengths)) + len(encode_ints(seqs)) + len(encode_floats(times))
    assert packed * 3 < 4 * 22 + 4 * 22 + 8 * 22


@pytest.mark.parametrize(
    'damaged',
    [
        encode_ints(range(100))[:-1],  # a value short
        encode_ints(range(100)) + b'\x00',  # a byte over
        encode_ints([7] * 100)[:-2],  # deflated, truncated
        b'\x0f\x01\x00',  # unknown width bits with a stray flag
        b'\x00\x80',  # header cut
        encode_floats([1.5]),  # floats read as ints
    ],
)
def test_damage_is_refused_not_misread(damaged: bytes) -> None:
    with pytest.raises(ValueError, match='packed array'):
        decode_ints(damaged)


def test_ints_are_refused_as_floats() -> None:
    with pytest.raises(ValueError, match='packed array'):
        decode_floats(encode_ints([1, 2, 3]))
