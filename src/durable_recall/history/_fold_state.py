"""The resumable state of a record fold, small enough for the search index to store per run.

A run's record is rebuilt by folding its snapshots in order; the next fold reads only the last
snapshot and the record positions that snapshot names. Keeping just that lets the persistent index
go on folding in another process without re-reading the run's earlier snapshots.

Stored as bytes (`to_bytes`): a version byte, then unsigned LEB128 integers. One index row per run
holds it, so on a chat app's workload (a short run per exchange, each inheriting a window of 20) its
size is a large share of the store. Version 2 therefore keeps no content hashes: the messages it
names are read back by log number to resume anyway, and hashing them again is exact (a hash is a
function of the message). It keeps `previous` as runs of consecutive entries (a window is one or two
runs), so a state is a few bytes whatever the window. Only an entry without a log number keeps its
hash, since nothing could read it back. Version 3 adds the hashes of the summaries the last snapshot
carried (usually none or one), which no record position names. `from_bytes` still reads versions 2
and 1 (raw 16-byte hashes) and the JSON text of earlier releases.
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
            `(hash, body position, log number, record position or None)`. The hash is empty when
            the state was read back from bytes and the entry has a log number: resuming hashes
            the message it reads.
        record: The record's hash at each position `previous` names, where it differs from the
            hash of the `previous` entry naming it (an edit kept the original); empty when read
            back from bytes (resuming hashes the record message it reads).
        summaries: The hashes of the compaction summaries the last folded snapshot carried
            (`summary_view`): a summary the next snapshot still carries is not recorded again.
    """

    size: int
    marker: int
    previous: tuple[tuple[str, int, int, int | None], ...]
    record: Mapping[int, str]
    summaries: tuple[str, ...] = ()

    def to_bytes(self) -> bytes:
        """The compact binary form, for the index to store (see the module docstring)."""
        out = bytearray([_VERSION])
        _put(out, self.size)
        _put(out, self.marker)
        groups = _groups(self.previous)
        _put(out, len(groups))
        for (digest, body, seq, record), length in groups:
            _put(out, body)
            _put(out, seq + 1)  # 0: an entry with no log number, whose hash follows
            _put(out, 0 if record is None else record + 1)
            _put(out, length)
            if seq < 0:
                _put_digest(out, digest)
        _put(out, len(self.record))
        last = 0
        for position in sorted(self.record):
            _put(out, position - last)
            last = position
        _put(out, len(self.summaries))
        for digest in self.summaries:
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
        version = data[:1]
        if version in (bytes([_VERSION]), bytes([_VERSION_2])):
            return cls._from_version_2(data, with_summaries=version == bytes([_VERSION]))
        if version != bytes([_VERSION_1]):
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
    def _from_version_2(cls, data: bytes, *, with_summaries: bool) -> FoldState:
        try:
            reader = _Reader(data, 1)
            size, marker = reader.number(), reader.number()
            previous: list[tuple[str, int, int, int | None]] = []
            for _ in range(reader.number()):
                body, seq, record, length = (
                    reader.number(),
                    reader.number() - 1,
                    _optional(reader.number()),
                    reader.number(),
                )
                digest = reader.digest() if seq < 0 else ''
                if length < 1 or (seq < 0 and length != 1):
                    raise ValueError(f'not a record builder state: a run of {length} entries')
                previous.extend(
                    (digest, body + k, seq + k if seq >= 0 else seq, None if record is None else record + k)
                    for k in range(length)
                )
            positions: dict[int, str] = {}
            position = 0
            for _ in range(reader.number()):
                position += reader.number()
                positions[position] = ''
            summaries = tuple(reader.digest() for _ in range(reader.number())) if with_summaries else ()
            if reader.offset != len(data):
                raise ValueError(f'not a record builder state: {len(data) - reader.offset} bytes left over')
        except IndexError as error:
            raise ValueError('not a record builder state: truncated') from error
        return cls(size=size, marker=marker, previous=tuple(previous), record=positions, summaries=summaries)

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


_VERSION = 3
"""The first byte of the binary state written now (JSON text starts with `{`)."""

_VERSION_2 = 2
"""The first byte of the state written before summaries were recorded: version 3 without them."""

_VERSION_1 = 1
"""The first byte of the earlier binary state, which kept each entry's 16-byte hash."""


def _groups(
    previous: tuple[tuple[str, int, int, int | None], ...],
) -> list[tuple[tuple[str, int, int, int | None], int]]:
    """`previous` as runs of entries that each go on from the one before (body, log and record positions + 1)."""
    groups: list[tuple[tuple[str, int, int, int | None], int]] = []
    for entry in previous:
        if groups:
            (_, body, seq, record), length = groups[-1]
            _, next_body, next_seq, next_record = entry
            follows = (
                seq >= 0
                and next_body == body + length
                and next_seq == seq + length
                and (next_record is None if record is None else next_record == record + length)
            )
            if follows:
                groups[-1] = (groups[-1][0], length + 1)
                continue
        groups.append((entry, 1))
    return groups


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
