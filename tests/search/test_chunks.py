"""The index's postings chunks: open tails that concatenate, sealed chunks that pack, both decode sorted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_recall.index import PostingsRow
from durable_recall.index._chunks import (
    OPEN,
    SEAL_AT,
    Chunk,
    decode_chunk,
    merged,
    pack_open,
    run_postings,
    seal,
    without_run,
)
from durable_recall.index._columns import MIN_ROWS, Columns, decode_columns, term_postings

values = st.one_of(st.integers(1, 70), st.integers(0xFFF0, 0x1_0010), st.integers(1, 2**32 - 1))
runs = st.dictionaries(
    st.integers(1, 2**31),
    st.dictionaries(st.integers(0, 2**32 - 1), st.tuples(values, values), min_size=1, max_size=12),
    min_size=1,
    max_size=6,
)


def entries(postings: dict[int, dict[int, tuple[int, int]]]) -> list[tuple[int, int, int]]:
    return sorted(
        (run_key << 32 | position, tf, length)
        for run_key, positions in postings.items()
        for position, (tf, length) in positions.items()
    )


@given(postings=runs)
def test_open_tails_concatenate_in_any_run_order_and_decode_sorted(
    postings: dict[int, dict[int, tuple[int, int]]],
) -> None:
    data = b''.join(
        pack_open(run_key, [(position, tf, length) for position, (tf, length) in sorted(positions.items())])
        for run_key, positions in reversed(postings.items())
    )
    assert decode_chunk(OPEN, data).entries() == entries(postings)


@given(postings=runs)
def test_sealed_chunks_round_trip(postings: dict[int, dict[int, tuple[int, int]]]) -> None:
    wanted = entries(postings)
    assert decode_chunk(1, seal(list(reversed(wanted)))).entries() == wanted


@given(postings=runs, sealed=st.booleans())
def test_taking_a_run_out_keeps_the_others(postings: dict[int, dict[int, tuple[int, int]]], sealed: bool) -> None:
    number = 1 if sealed else OPEN
    wanted = entries(postings)
    data = seal(wanted) if sealed else b''.join(pack_open(k >> 32, [(k & 0xFFFFFFFF, t, n)]) for k, t, n in wanted)
    gone = next(iter(postings))
    kept = without_run(number, data, gone)
    rest = [entry for entry in wanted if entry[0] >> 32 != gone]
    assert kept is not None
    assert (decode_chunk(number, kept).entries() if kept else []) == rest
    assert without_run(number, data, 2**31 + 1) is None
    chunk = decode_chunk(number, data)
    assert run_postings([chunk], gone) == sorted((p, tf, n) for p, (tf, n) in postings[gone].items())


def test_a_sealed_chunk_of_common_postings_packs_small() -> None:
    wanted = [
        (run_key << 32 | position, 1, 40 + position) for run_key in range(1, SEAL_AT // 4 + 1) for position in range(4)
    ]
    assert len(wanted) == SEAL_AT
    assert len(seal(wanted)) < 3 * len(wanted)
    assert len(seal(wanted[:1])) == 11  # flags, run key, and 16-bit position, tf and length


def test_an_open_tail_takes_a_varint_per_value_and_wide_values_take_more_bytes() -> None:
    assert len(pack_open(7, [(3, 1, 40), (9, 2, 41)])) == 8  # four one-byte varints a posting
    assert len(pack_open(300, [(3, 1, 40)])) == 5  # a run key past 127 takes two bytes
    wide = pack_open(7, [(3, 70_000, 70_000), (4, 1, 0xFFFF)])
    assert len(wide) == 1 + 1 + 3 + 3 + 1 + 1 + 1 + 3
    assert decode_chunk(OPEN, wide).entries() == [(7 << 32 | 3, 70_000, 70_000), (7 << 32 | 4, 1, 0xFFFF)]
    big = pack_open(2**31 + 5, [(2**32 - 1, 2**32 - 1, 2**32 - 1)])
    assert decode_chunk(OPEN, big).entries() == [((2**31 + 5) << 32 | 2**32 - 1, 2**32 - 1, 2**32 - 1)]


@pytest.mark.parametrize(
    'data',
    [
        pytest.param(bytes((1, 2, 3)), id='three-varints'),
        pytest.param(bytes((1, 2, 3, 0x80)), id='ends-inside-a-varint'),
        pytest.param(bytes((1, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 1, 1)), id='position-past-32-bits'),
    ],
)
def test_a_damaged_open_tail_does_not_decode(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_chunk(OPEN, data)


@given(postings=runs, pieces=st.integers(1, 5))
def test_merged_chunks_are_one_sorted_chunk_whatever_their_ranges(
    postings: dict[int, dict[int, tuple[int, int]]], pieces: int
) -> None:
    wanted = entries(postings)
    # Interleaved slices give overlapping ranges; contiguous ones give ordered ranges.
    for chunks in ([wanted[i::pieces] for i in range(pieces)], [wanted[i : i + 3] for i in range(0, len(wanted), 3)]):
        decoded = [decode_chunk(1, seal(part)) for part in chunks if part]
        assert merged(list(reversed(decoded))).entries() == wanted


# The first example may pay numpy's import: the deadline would time that, not the decode.
@settings(deadline=None)
@given(postings=runs, pieces=st.integers(1, 5), tail=st.booleans())
def test_columns_decode_what_merged_chunks_hold(
    postings: dict[int, dict[int, tuple[int, int]]], pieces: int, tail: bool
) -> None:
    """A common term's rows decoded into numpy columns hold exactly the merged `Chunk`, in key order."""
    wanted = entries(postings)
    for chunks in ([wanted[i::pieces] for i in range(pieces)], [wanted[i : i + 3] for i in range(0, len(wanted), 3)]):
        rows = [PostingsRow(chunk=number + 1, postings=seal(part)) for number, part in enumerate(chunks) if part]
        if tail and len(rows) > 1:  # the last part in the open tail instead (its records in any order)
            last = chunks[-1]
            records = b''.join(pack_open(k >> 32, [(k & 0xFFFFFFFF, t, n)]) for k, t, n in reversed(last))
            rows[-1] = PostingsRow(chunk=OPEN, postings=records)
        columns = decode_columns(rows)
        expected = merged([decode_chunk(row.chunk, row.postings) for row in rows])
        assert columns.keys.tolist() == list(expected.keys)
        assert columns.tfs.tolist() == list(expected.tfs)
        assert columns.lengths.tolist() == list(expected.lengths)
        for run_key in postings:
            assert columns.run_range(run_key) == expected.run_range(run_key)


def test_a_term_of_many_rows_decodes_into_columns_and_a_rare_one_into_a_chunk() -> None:
    rows = [PostingsRow(chunk=number, postings=seal([(number << 32 | 1, 1, 5)])) for number in range(1, MIN_ROWS + 1)]
    assert isinstance(term_postings(rows), Columns)
    assert isinstance(term_postings(rows[:-1]), Chunk)
