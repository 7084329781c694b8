"""The resumable state of a record fold, small enough for the search index to store per run.

A run's record is rebuilt by folding its snapshots in order; the next fold reads only the last
snapshot and the record positions that snapshot names. Keeping just that (well under a kilobyte for
a window of 20 messages, whatever the run's length) lets the persistent index go on folding in
another process without re-reading the run's earlier snapshots.

Stored as bytes (`to_bytes`): a version byte, then unsigned LEB128 integers and raw 32-byte
digests. One index row per run holds it, so on a chat app's workload (a short run per exchange,
each inheriting a window) its size is a large share of the store; JSON with hex digests was twice
as large. `from_bytes` still reads the JSON text earlier releases stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ._hash import HASH_HEX_LENGTH

__all__ = ('FoldState',)


@dataclass(frozen=True)
class FoldState:
    """What a `RecordBuilder` needs to go on folding, without the record itself.

    Attributes:
        size: The record's length.
        marker: The dropped count of the last folded snapshot's compaction marker (0 for none).
        previous: The last folded snapshot's messages (artifacts removed) as
            `(hash, body position, log number, record position or None)`.
        record: The record's hash at each position `previous` names, where it differs from the
            hash of the `previous` entry naming it (an edit kept the original).
    """

    size: int
    marker: int
    previous: tuple[tuple[str, int, int, int | None], ...]
    record: Mapping[int, str]

    def to_bytes(self) -> bytes:
        """The compact binary form, for the index to store."""
        out = bytearray([_VERSION])
        _put(out, self.size)
        _put(out, self.marker)
        _put(out, len(self.previous))
        for digest, body, seq, record in self.previous:
            _put_digest(out, digest)
            _put(out, body)
            _put(out, seq + 1)  # -1: an entry with no log number
            _put(out, 0 if record is None else record + 1)
        _put(out, len(self.record))
        for position, digest in sorted(self.record.items()):
            _put(out, position)
            _put_digest(out, digest)
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> FoldState:
        """Read `to_bytes` output back (or the JSON text of earlier releases, as UTF-8).

        Raises:
            ValueError: The bytes are not a state this version or an earlier one wrote.
        """
        if data[:1] == b'{':
            return cls._from_json(data.decode('utf-8', errors='replace'))
        if data[:1] != bytes([_VERSION]):
            raise ValueError(f'not a record builder state: unknown version {data[:1]!r}')
        try:
            reader = _Reader(data, 1)
            size, marker = reader.number(), reader.number()
            previous = tuple(
                (reader.digest(), reader.number(), reader.number() - 1, _optional(reader.number()))
                for _ in range(reader.number())
            )
            record = {reader.number(): reader.digest() for _ in range(reader.number())}
            if reader.offset != len(data):
                raise ValueError(f'not a record builder state: {len(data) - reader.offset} bytes left over')
        except IndexError as error:
            raise ValueError('not a record builder state: truncated') from error
        return cls(size=size, marker=marker, previous=previous, record=record)

    @classmethod
    def _from_json(cls, text: str) -> FoldState:
        # Earlier releases kept whole sha256 digests; hashes are their first 128 bits now.
        try:
            data = json.loads(text)
            return cls(
                size=int(data['size']),
                marker=int(data['marker']),
                previous=tuple(
                    (str(digest)[:HASH_HEX_LENGTH], int(body), int(seq), None if record is None else int(record))
                    for digest, body, seq, record in data['previous']
                ),
                record={int(position): str(digest)[:HASH_HEX_LENGTH] for position, digest in data['record']},
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f'not a record builder state: {error}') from error

    def needed(self) -> tuple[list[int], list[int]]:
        """The log numbers of `previous`, and the record positions whose message must be loaded to resume."""
        return [seq for _, _, seq, _ in self.previous], sorted(self.record)


_VERSION = 1
"""The first byte of a binary state (JSON text starts with `{`)."""


def _put(out: bytearray, value: int) -> None:
    """Append an unsigned LEB128 integer."""
    if value < 0:
        raise ValueError(f'a state integer cannot be negative, got {value}')
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _put_digest(out: bytearray, digest: str) -> None:
    """A hex digest as its raw bytes, length first (message hashes are 16 bytes)."""
    raw = bytes.fromhex(digest)
    _put(out, len(raw))
    out += raw


def _optional(value: int) -> int | None:
    return None if value == 0 else value - 1


class _Reader:
    """Reads what `_put` and `_put_digest` wrote, from `offset` on."""

    def __init__(self, data: bytes, offset: int) -> None:
        self._data = data
        self.offset = offset

    def number(self) -> int:
        value = shift = 0
        while True:
            byte = self._data[self.offset]
            self.offset += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def digest(self) -> str:
        size = self.number()
        raw = self._data[self.offset : self.offset + size]
        if len(raw) != size:
            raise IndexError('digest runs past the end')
        self.offset += size
        return raw.hex()
