"""How a term's postings in a scope are packed into rows: an open tail, and sealed chunks.

A row per `(term, run)` made the index as many rows as postings for every rare term, and a
common term as many rows as runs: ~30 bytes of row overhead per posting, a B-tree insert per
term and run when indexing, and thousands of rows to read for one common word. Postings of a
term in a scope now live in few rows, numbered per `(scope, term)`:

* chunk `OPEN` (0), the open tail: a record per posting, `run key, position, tf, length` as four
  unsigned LEB128 varints, in the order they were indexed. A commit appends to it with a byte
  concatenation the database does in place (no read), so indexing a run costs one upsert per term
  whatever the term's history. Most of a store's rows are open tails of a rare word (an id, a
  number, a path) holding a posting or two, so their records are most of the postings' bytes:
  about 5 to 7 bytes a posting (fixed-width records took 12);
* chunks 1, 2, ...: sealed. Once the open tail holds `SEAL_BYTES` bytes (`SEAL_AT` postings of the
  smallest records, about 60 of a real store's) it is sorted by document and sealed: run keys as
  deltas, then positions, tfs and lengths, each column 16-bit where every value fits (a flag byte
  says which are 32-bit), and the whole DEFLATE-compressed when that is smaller. About 5.5 bytes
  a posting, decoded at C speed.

A document is keyed `run_key << 32 | position` here as in the scorer. Every chunk decodes to its
postings sorted by key, so a scorer can bisect a chunk for a document.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate
from typing import NamedTuple

from ._storage import RunCommit

__all__ = (
    'OPEN',
    'SEAL_AT',
    'SEALED_MAX',
    'SEAL_BYTES',
    'Chunk',
    'appended_postings',
    'decode_chunk',
    'merged',
    'pack_open',
    'run_postings',
    'seal',
    'sealed_columns',
    'seal_tail',
    'without_run',
)

OPEN = 0
"""The chunk number of a term's open tail."""

SEAL_AT = 88
"""Postings of the smallest records (four bytes) that fill an open tail (`SEAL_BYTES`)."""

SEALED_MAX = 160
"""Postings a sealed chunk holds at most (about 900 bytes packed)."""

SEAL_BYTES = SEAL_AT * 4
"""The size at which an open tail is sealed."""

_WIDE_POSITIONS, _WIDE_TFS, _WIDE_LENGTHS, _DEFLATED = 1, 2, 4, 8
_COMPRESS_FROM = 8
"""Sealed chunks with fewer postings are left uncompressed: DEFLATE's framing costs more than it saves."""

_SWAP = sys.byteorder != 'little'


class Chunk(NamedTuple):
    """One row's postings, sorted by document key: aligned keys, term frequencies and lengths."""

    keys: Sequence[int]
    tfs: Sequence[int]
    lengths: Sequence[int]

    def entries(self) -> list[tuple[int, int, int]]:
        """`(key, tf, length)` per posting."""
        return list(zip(self.keys, self.tfs, self.lengths, strict=True))

    def run_range(self, run_key: int) -> tuple[int, int]:
        """The slice of postings that belong to `run_key`."""
        start = bisect_left(self.keys, run_key << 32)
        return start, bisect_left(self.keys, (run_key + 1) << 32, start)


def pack_open(run_key: int, postings: Sequence[tuple[int, int, int]]) -> bytes:
    """A run's `(position, tf, length)` postings as open-tail records (which concatenate)."""
    head = _varint(run_key)
    records: list[bytes] = []
    for position, tf, length in postings:
        if position < 0x80 and tf < 0x80 and length < 0x80:
            records.append(head + bytes((position, tf, length)))
        else:
            records.append(head + _varint(position) + _varint(tf) + _varint(length))
    return b''.join(records)


def _varint(value: int) -> bytes:
    """`value` as unsigned LEB128: seven bits a byte, low first, the high bit set on all but the last."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def appended_postings(change: RunCommit, run_key: int) -> list[tuple[str, bytes]]:
    """What a commit appends to each term's open tail, in term order (`postings_set` after removal)."""
    out = {term: pack_open(run_key, found) for term, found in change.postings_add.items() if found}
    for term, found in change.postings_set.items():
        if found:
            out[term] = out.get(term, b'') + pack_open(run_key, found)
    return sorted(out.items())


def seal(entries: Sequence[tuple[int, int, int]]) -> bytes:
    """A sealed chunk of `(key, tf, length)` postings (sorted here)."""
    ordered = sorted(entries)
    runs = [key >> 32 for key, _, _ in ordered]
    flags = 0
    columns = [_bytes(array('I', [runs[0], *(b - a for a, b in zip(runs, runs[1:], strict=False))]))]
    for flag, column in (
        (_WIDE_POSITIONS, [key & 0xFFFFFFFF for key, _, _ in ordered]),
        (_WIDE_TFS, [tf for _, tf, _ in ordered]),
        (_WIDE_LENGTHS, [length for _, _, length in ordered]),
    ):
        if max(column) <= 0xFFFF:
            columns.append(_bytes(array('H', column)))
        else:
            columns.append(_bytes(array('I', column)))
            flags |= flag
    body = b''.join(columns)
    if len(ordered) >= _COMPRESS_FROM:
        packed = zlib.compress(body, 6)
        if len(packed) < len(body):
            return bytes((flags | _DEFLATED,)) + packed
    return bytes((flags,)) + body


def seal_tail(data: bytes) -> list[bytes]:
    """A full open tail as sealed chunks of at most `SEALED_MAX` postings each, in key order.

    A batched commit can fill a tail far past `SEAL_AT`; one chunk of all of it would outgrow
    what a database keeps in a B-tree page.
    """
    entries = decode_chunk(OPEN, data).entries()
    return [seal(entries[start : start + SEALED_MAX]) for start in range(0, len(entries), SEALED_MAX)]


def decode_chunk(number: int, data: bytes) -> Chunk:
    """A row's postings, sorted by key."""
    if number == OPEN:
        return _decode_open(data)
    body, count, widths = sealed_columns(data)
    runs = _array('I', body[: 4 * count])
    offset = 4 * count
    columns: list[array[int]] = []
    for width in widths:
        size = width * count
        columns.append(_array('I' if width == 4 else 'H', body[offset : offset + size]))
        offset += size
    positions, tfs, lengths = columns
    keys = [run << 32 | position for run, position in zip(accumulate(runs), positions, strict=True)]
    return Chunk(keys, tfs, lengths)


def sealed_columns(data: bytes) -> tuple[bytes, int, tuple[int, int, int]]:
    """A sealed chunk's inflated body, its postings count, and the widths in bytes of positions, tfs and lengths.

    The body is the run-key deltas (4 bytes each), then those three columns, little-endian:
    what a decoder into other arrays than `Chunk`'s (the scorer's vectorised columns) reads.
    """
    flags = data[0]
    body = zlib.decompress(data[1:]) if flags & _DEFLATED else data[1:]
    widths = tuple(4 if flags & flag else 2 for flag in (_WIDE_POSITIONS, _WIDE_TFS, _WIDE_LENGTHS))
    return body, len(body) // (4 + sum(widths)), (widths[0], widths[1], widths[2])


def without_run(number: int, data: bytes, run_key: int) -> bytes | None:
    """The row with `run_key`'s postings taken out: `data` itself if it has none, `b''` if nothing is left.

    Returns:
        The new row contents, or `None` when the row holds no posting of the run.
    """
    chunk = decode_chunk(number, data)
    start, end = chunk.run_range(run_key)
    if start == end:
        return None
    kept = chunk.entries()
    del kept[start:end]
    if not kept:
        return b''
    if number == OPEN:
        return b''.join(pack_open(key >> 32, [(key & 0xFFFFFFFF, tf, length)]) for key, tf, length in kept)
    return seal(kept)


def merged(chunks: Sequence[Chunk]) -> Chunk:
    """A term's chunks as one, sorted by key: one bisect finds a document, where each chunk took two.

    Sealed chunks cover increasing key ranges (runs are indexed oldest first), so this is mostly a
    concatenation; ranges that overlap (a run indexed again later) are sorted.
    """
    ordered = sorted((chunk for chunk in chunks if chunk.keys), key=lambda chunk: chunk.keys[0])
    if len(ordered) == 1:
        return ordered[0]
    keys: list[int] = []
    tfs: list[int] = []
    lengths: list[int] = []
    overlap = False
    for chunk in ordered:
        if keys and chunk.keys[0] <= keys[-1]:
            overlap = True
        keys += chunk.keys
        tfs += chunk.tfs
        lengths += chunk.lengths
    if overlap:
        entries = sorted(zip(keys, tfs, lengths, strict=True))
        return Chunk([e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries])
    return Chunk(keys, tfs, lengths)


def run_postings(chunks: Sequence[Chunk], run_key: int) -> list[tuple[int, int, int]]:
    """`(position, tf, length)` of one run across a term's chunks, positions increasing."""
    found: list[tuple[int, int, int]] = []
    for chunk in chunks:
        start, end = chunk.run_range(run_key)
        found += ((chunk.keys[i] & 0xFFFFFFFF, chunk.tfs[i], chunk.lengths[i]) for i in range(start, end))
    return sorted(found)


def _decode_open(data: bytes) -> Chunk:
    values: list[int] = []
    if data.isascii():  # every value below 128: a byte each (a small store's common case)
        values = list(data)
    else:
        value = shift = 0
        for byte in data:
            if byte & 0x80:
                value |= (byte & 0x7F) << shift
                shift += 7
            else:
                values.append(value | byte << shift)
                value = shift = 0
        if shift:
            raise ValueError('an open tail ends inside a varint')
    if len(values) % 4:
        raise ValueError(f'an open tail holds {len(values)} varints, not records of four')
    positions = values[1::4]
    if max(positions, default=0) > 0xFFFFFFFF:
        raise ValueError('an open-tail position does not fit 32 bits')
    keys = [run << 32 | position for run, position in zip(values[0::4], positions, strict=True)]
    tfs = values[2::4]
    lengths = values[3::4]
    if all(a < b for a, b in zip(keys, keys[1:], strict=False)):
        return Chunk(keys, tfs, lengths)
    ordered = sorted(zip(keys, tfs, lengths, strict=True))
    return Chunk([e[0] for e in ordered], [e[1] for e in ordered], [e[2] for e in ordered])


def _bytes(values: array[int]) -> bytes:
    if _SWAP:
        values.byteswap()
    return values.tobytes()


def _array(kind: str, data: bytes) -> array[int]:
    values: array[int] = array(kind)
    values.frombytes(data)
    if _SWAP:
        values.byteswap()
    return values
