"""Rare words' open tails on Postgres, many to a row: `{index_groups}`.

Most of an index's postings rows are the open tail of a rare word (an id, a number, a path, a
misspelling) that holds one posting of five or six bytes. On Postgres such a row costs far more
than it holds: a 24-byte tuple header and line pointer, the scope key and chunk number, and a
B-tree entry of the whole key (about 60 bytes at the fill random inserts leave), so ~120 bytes
for ~17 of term and posting, which made them half of a large store. So an open tail of at most
`GROUP_TAIL_BYTES` bytes, of a term with no row of its own, lives in a *group* row instead:
`(scope_key, bucket, terms)`, where `terms` packs each term of the bucket with its tail
(`pack_group`), and the bucket is the first 32 bits of the term's SHA-256 masked to the scope's
`group_bits` (`bucket_of`, and `BUCKET_SQL` for the same number in a statement).

Rules (`_index_writer` keeps them; `_index` reads by them):

* a term of a scope is in at most one place: its bucket's group, or rows of its own in
  `{index_postings}`; the writer looks in its own rows first;
* a grouped tail that outgrows `GROUP_TAIL_BYTES` leaves its group for a row of its own (chunk 0),
  and never comes back while it has rows; a term with sealed chunks appends to a tail row of its own;
* a scope starts with one bucket (`group_bits` 0 in `{index_scopes}`); when a group outgrows
  `GROUP_BYTES`, the scope's buckets double (every group row of the scope rewritten once) until
  none does: rows stay well under the 2 KB at which Postgres would move them out of line, and the
  cost of doubling is paid once per doubling of the vocabulary (amortised: each term is rewritten
  about twice over the scope's life);
* a group is rewritten whenever a word joins it, so the table is created with `fillfactor` 70:
  room on each page for the new version, which Postgres then writes on the same page (a HOT
  update, no index entry) and reclaims in place. Measured at 100,000 messages a conversation on a
  server with autovacuum off: groups took 72 MB for 17 MB of live rows at the default fill, 35 MB
  at 70 (50 did no better); rows of 256 bytes instead of 1 KB, more of them, took more;
* groups are written only by the commit that holds the conversation's advisory lock (see
  `_index`), so a read-modify-write of a group needs no row lock; readers see a commit whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import LiteralString

__all__ = (
    'BUCKET_SQL',
    'DAMAGED_TAIL',
    'GROUP_BYTES',
    'GROUP_TAIL_BYTES',
    'MAX_GROUP_BITS',
    'bucket_of',
    'group_terms',
    'pack_group',
    'term_hash',
    'unpack_group',
)

GROUP_TAIL_BYTES = 32
"""The largest open tail a group holds: four or five postings (a word seen once takes ~6 bytes)."""

GROUP_BYTES = 1024
"""A group row larger than this doubles its scope's buckets."""

MAX_GROUP_BITS = 24
"""Buckets stop doubling at 2**24 per scope (rows then grow instead; no real scope gets there)."""

DAMAGED_TAIL = b'\x80'
"""What a grouped term's tail reads as when its group row does not unpack: a varint cut short,
which every decoder of an open tail refuses, so the search names the damage instead of using it."""

BUCKET_SQL: LiteralString = (
    "((('x' || left(encode(sha256(convert_to({term}, 'UTF8')), 'hex'), 8))::bit(32)::bigint"
    ' & ((1::bigint << {bits}) - 1))::int)'
)
"""`bucket_of` in SQL, with `{term}` and `{bits}` to fill in (by `str.replace`: they are fixed column names)."""


def term_hash(term: str) -> int:
    """The first 32 bits of the term's SHA-256: its bucket under any number of bits is these, masked."""
    return int.from_bytes(hashlib.sha256(term.encode()).digest()[:4], 'big')


def bucket_of(term: str, bits: int) -> int:
    """The term's bucket in a scope of `2**bits` buckets."""
    return term_hash(term) & ((1 << bits) - 1)


def pack_group(tails: Mapping[str, bytes]) -> bytes:
    """A group row's `terms`: per term in code-point order, varint lengths and bytes of the term, then of its tail."""
    parts: list[bytes] = []
    for term in sorted(tails):
        name = term.encode()
        tail = tails[term]
        parts += (_varint(len(name)), name, _varint(len(tail)), tail)
    return b''.join(parts)


def unpack_group(data: bytes) -> dict[str, bytes]:
    """The tails a group row holds, by term.

    Raises:
        ValueError: The bytes are not a group (a length past the end, a term that is not UTF-8,
            terms out of order or repeated, an empty tail): nothing of it is used.
    """
    tails: dict[str, bytes] = {}
    at, end, last = 0, len(data), None
    while at < end:
        size, at = _read_varint(data, at)
        name = data[at : at + size]
        at += size
        length, at = _read_varint(data, at)
        tail = data[at : at + length]
        at += length
        if at > end or not tail:
            raise ValueError('a group row ends inside an entry')
        term = name.decode()
        if last is not None and term <= last:
            raise ValueError('a group row holds terms out of order')
        tails[term] = tail
        last = term
    return tails


def group_terms(rows: Iterable[bytes]) -> list[str]:
    """Every term the group rows hold (a row that does not unpack is skipped: listing it is all this is for)."""
    found: list[str] = []
    for data in rows:
        try:
            found.extend(unpack_group(data))
        except ValueError:
            continue
    return found


_SMALL = [bytes((value,)) for value in range(0x80)]


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    if at < len(data) and data[at] < 0x80:
        return data[at], at + 1
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError('a group row ends inside a varint')
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
