"""Snapshot rows and message-log entries, decoded: shared by the SQLite and Postgres stores.

A snapshot row holds its log ranges as compact JSON; its messages are the run's log entries the
ranges name, each a body (JSON text, or compressed bytes, see `durable_recall.base._codec`). A row
that does not decode, or names an entry that is missing, raises
[`CorruptSnapshotError`][durable_recall.errors.CorruptSnapshotError] naming the run and the snapshot: a
reader must never be handed a history with a silent hole in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from ..base import (
    CorruptSnapshotError,
    MessageDecodeError,
    Snapshot,
    SnapshotState,
    StoredBody,
    decode_body,
    load_messages,
    stored_time,
)
from ._chain import LogRange, ranges_size, snapshot_seqs
from ._snapshot_sum import snapshot_checksum

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = (
    'ReadListing',
    'SnapshotRow',
    'decode_log',
    'decode_log_bodies',
    'decode_ranges',
    'decode_snapshot',
    'decode_snapshots',
    'encode_ranges',
    'check_consecutive',
    'gather_bodies',
    'log_span',
)


_STATES: frozenset[str] = frozenset({'complete', 'interrupted'})


@dataclass(frozen=True)
class SnapshotRow:
    """One snapshot row as a store read it, before it is checked.

    Attributes:
        run_id: The run the snapshot belongs to.
        index: The snapshot's position in the run.
        step_index: The agent's run step when it was taken.
        state: The stored state text (checked by `decode_snapshot`).
        saved_at: The stored timestamp: a `datetime` from Postgres, microseconds since the epoch
            from SQLite (ISO text in a row written before schema version 11 that did not convert).
        ranges: The stored log ranges as JSON text.
        size: The stored message count, checked against the ranges.
        checksum: The stored checksum of the row (`_snapshot_sum`), checked before anything else is read.
    """

    run_id: str
    index: int
    step_index: int
    state: str
    saved_at: datetime | str | int
    ranges: str
    size: int
    checksum: str | None

    def is_shown(self, include_interrupted: bool) -> bool:
        """Whether a listing shows the row: anything but a well-formed interrupted row is shown.

        An unknown state is shown rather than filtered out, so that reading it raises instead of
        silently dropping the snapshot.
        """
        return include_interrupted or self.state != 'interrupted'


def encode_ranges(ranges: Iterable[LogRange]) -> str:
    """Compact JSON text of log ranges, e.g. `[[0,5],[9,12]]`."""
    return json.dumps([[first, end] for first, end in ranges], separators=(',', ':'))


def log_span(rows: Sequence[SnapshotRow]) -> tuple[int, int]:
    """The smallest `[first, end)` span of log numbers the rows' ranges touch, to read only those.

    A row whose ranges do not parse gives the widest span, so that decoding it raises the
    corruption error with its reason rather than this helper.
    """
    first, end = None, None
    for row in rows:
        try:
            ranges = decode_ranges(row.run_id, row.index, row.ranges)
        except CorruptSnapshotError:
            return 0, 2**62
        for start, stop in ranges:
            first = start if first is None else min(first, start)
            end = stop if end is None else max(end, stop)
    return (first or 0, end or 0)


def decode_ranges(run_id: str, index: int, text: str) -> list[LogRange]:
    """Parse a snapshot's log ranges.

    Raises:
        CorruptSnapshotError: The text is not a JSON list of `[first, end]` pairs with
            `0 <= first < end`.
    """
    try:
        value: Any = json.loads(text)
    except ValueError as error:
        raise CorruptSnapshotError(run_id, index, f'log ranges are not JSON ({error})') from error
    if not isinstance(value, list):
        raise CorruptSnapshotError(run_id, index, 'log ranges are not a JSON list')
    ranges: list[LogRange] = []
    for item in cast(list[Any], value):
        if not _is_range(item):
            raise CorruptSnapshotError(run_id, index, f'log range {item!r} is not a [first, end] pair of log numbers')
        ranges.append((item[0], item[1]))
    return ranges


def decode_snapshot(
    row: SnapshotRow,
    log: Mapping[int, StoredBody | None],
    decoded: dict[int, ModelMessage] | None = None,
    shared: MutableMapping[object, ModelMessage] | None = None,
) -> Snapshot:
    """Assemble a snapshot from its row and the run's log entries.

    Args:
        row: The snapshot row.
        log: Log entries by number; must hold at least every entry the row's ranges name.
        decoded: Entries already decoded, by number, shared by the snapshots of one listing:
            consecutive snapshots hold mostly the same entries, and each is decoded once (the
            snapshots then share those message objects).
        shared: Messages already decoded, by stored body, shared by the listings of one reader
            (the index's catch-up): a run's first snapshot holds the window it inherited, whose
            bodies are the earlier run's, decoded when that run was read. Equal bodies decode
            to equal messages (a damaged body never matches an intact one), so a hit is exact.

    Raises:
        CorruptSnapshotError: The state, timestamp or ranges are malformed, a log entry the ranges
            name is missing, or a message body does not decode.
    """
    if type(row.index) is not int:  # SQLite keeps whatever type a damaged file holds
        # Such a row sorts after every number, so a read of the latest snapshot finds it first.
        raise CorruptSnapshotError(row.run_id, -1, f'a snapshot index is stored as a {type(row.index).__name__}')
    state = _decode_state(row)
    saved_at = _decode_saved_at(row)
    if type(row.step_index) is not int:  # SQLite keeps whatever type a damaged file holds
        raise CorruptSnapshotError(row.run_id, row.index, f'step_index is a {type(row.step_index).__name__}')
    ranges = decode_ranges(row.run_id, row.index, row.ranges)
    if ranges_size(ranges) != row.size:
        raise CorruptSnapshotError(
            row.run_id, row.index, f'log ranges assemble {ranges_size(ranges)} messages but the row records {row.size}'
        )
    # Last of the row checks: the others name what they find; this catches a change that reads as valid.
    if row.checksum != snapshot_checksum(row.run_id, row.index, row.state, row.ranges, row.size):
        raise CorruptSnapshotError(
            row.run_id, row.index, 'the snapshot row does not match its checksum (its ranges, size or state changed)'
        )
    seqs = snapshot_seqs(ranges)
    decoded = {} if decoded is None else decoded
    missing = [seq for seq in seqs if seq not in decoded]
    if missing and shared is not None:
        missing = _from_shared(missing, log, decoded, shared)
    if missing:
        bodies = gather_bodies(row.run_id, row.index, _ranges_of(missing), log)
        try:
            loaded = load_messages(bodies)
        except MessageDecodeError as error:
            raise CorruptSnapshotError(row.run_id, row.index, str(error)) from error
        decoded.update(zip(missing, loaded, strict=True))
        if shared is not None:
            for seq, message in zip(missing, loaded, strict=True):
                shared[log[seq]] = message  # gather_bodies found every one of them
    messages = [decoded[seq] for seq in seqs]
    stored = [log.get(seq) for seq in seqs]
    bodies = [body for body in stored if body is not None]
    return Snapshot(
        run_id=row.run_id,
        index=row.index,
        step_index=row.step_index,
        state=state,
        saved_at=saved_at,
        messages=messages,
        seqs=seqs,
        bodies=bodies if len(bodies) == len(seqs) else [],  # aligned with `messages`, or none
    )


def _from_shared(
    missing: list[int],
    log: Mapping[int, StoredBody | None],
    decoded: dict[int, ModelMessage],
    shared: Mapping[object, ModelMessage],
) -> list[int]:
    """Take what `shared` holds of the missing entries into `decoded`; the entries still to decode."""
    still: list[int] = []
    for seq in missing:
        body = log.get(seq)
        message = shared.get(body) if body is not None else None
        if message is None:
            still.append(seq)
        else:
            decoded[seq] = message
    return still


def _ranges_of(seqs: Sequence[int]) -> list[LogRange]:
    """Log numbers as ranges (one per number; `gather_bodies` checks each is present)."""
    return [(seq, seq + 1) for seq in seqs]


def decode_snapshots(
    rows: Sequence[SnapshotRow],
    log: Mapping[int, StoredBody | None],
    shared: MutableMapping[object, ModelMessage] | None = None,
) -> list[Snapshot]:
    """Assemble a listing's snapshots, decoding each log entry once for all of them (see `decode_snapshot`)."""
    decoded: dict[int, ModelMessage] = {}
    return [decode_snapshot(row, log, decoded, shared) for row in rows]


@dataclass(frozen=True)
class ReadListing:
    """A run's listing read ahead of its decoding (the index's `Listing`): rows and the log entries they span.

    Attributes:
        rows: The snapshot rows the listing shows, checked to number on from the watermark.
        log: The log entries they span, by number.
        error: Why the rows did not read, raised when the listing is decoded instead.
    """

    rows: Sequence[SnapshotRow]
    log: Mapping[int, StoredBody | None]
    error: CorruptSnapshotError | None = None

    def snapshots(self, shared: MutableMapping[object, ModelMessage]) -> list[Snapshot]:
        """Decode the listing through `shared` (see `decode_snapshots`), or raise why it did not read."""
        if self.error is not None:
            raise self.error
        return decode_snapshots(self.rows, self.log, shared)


def decode_log(run_id: str, log: Mapping[int, StoredBody | None]) -> dict[int, ModelMessage]:
    """Decode log entries read by number (`read_messages`), in number order.

    Args:
        run_id: The run.
        log: The entries read, by number; `None` for an entry whose body is missing (a reference
            to a row that is gone).

    Raises:
        CorruptSnapshotError: A body is missing or does not decode; no single snapshot is to
            blame, so the index is reported as -1.
    """
    wanted = sorted(log)
    try:
        messages = load_messages(gather_bodies(run_id, -1, [(seq, seq + 1) for seq in wanted], log))
    except MessageDecodeError as error:
        raise CorruptSnapshotError(run_id, -1, str(error)) from error
    return dict(zip(wanted, messages, strict=True))


def decode_log_bodies(run_id: str, log: Mapping[int, StoredBody | None]) -> dict[int, str]:
    """The JSON text of log entries read by number (`read_log_bodies`), checksums verified, in number order.

    Raises:
        CorruptSnapshotError: A body is missing or does not decode (`decode_log`'s reasons); the
            JSON itself is not validated here: a reader that needs messages still goes through
            `load_messages`, which names a body that is not one.
    """
    wanted = sorted(log)
    return dict(zip(wanted, gather_bodies(run_id, -1, [(seq, seq + 1) for seq in wanted], log), strict=True))


def gather_bodies(
    run_id: str, index: int, ranges: Sequence[LogRange], log: Mapping[int, StoredBody | None]
) -> list[str]:
    """The message bodies (JSON text) that a snapshot's log ranges name, in order.

    Raises:
        CorruptSnapshotError: A log entry the ranges name is missing, or its stored body does
            not decompress.
    """
    bodies: list[str] = []
    for first, end in ranges:
        for seq in range(first, end):
            stored = log.get(seq)
            if stored is None:
                raise CorruptSnapshotError(run_id, index, f'message {seq} of the run log is missing')
            try:
                bodies.append(decode_body(stored))
            except MessageDecodeError as error:
                raise CorruptSnapshotError(run_id, index, f'message {seq} of the run log: {error}') from error
    return bodies


def _decode_state(row: SnapshotRow) -> SnapshotState:
    if row.state not in _STATES:
        raise CorruptSnapshotError(row.run_id, row.index, f'unknown state {row.state!r}')
    return cast(SnapshotState, row.state)


def _decode_saved_at(row: SnapshotRow) -> datetime:
    try:
        return stored_time(row.saved_at)
    except ValueError as error:
        raise CorruptSnapshotError(row.run_id, row.index, f'saved_at {error}') from error


def _is_range(item: Any) -> TypeGuard[Sequence[int]]:
    if not isinstance(item, list) or len(cast(list[Any], item)) != 2:
        return False
    first, end = cast(list[Any], item)
    return (
        type(first) is int  # bool is an int subclass; a stored `true` is not a log number
        and type(end) is int
        and 0 <= first < end
    )


def check_consecutive(run_id: str, rows: Sequence[SnapshotRow], after: int) -> None:
    """Refuse a listing whose rows do not number on from `after` one by one.

    A run's snapshots are saved in order with no gaps, so a gap is a row that was lost (or whose
    index a damaged file holds as another type), and a listing without it would read as whole.

    Raises:
        CorruptSnapshotError: Names the first index that is missing; or, when the numbered rows
            follow on but a row's index is not an integer (SQLite keeps whatever type a damaged
            file holds), names no snapshot (-1): that row's place in the run is unknown.
    """
    expected = max(after, -1) + 1  # `after` below -1 means from the first snapshot, as -1 does
    mistyped: list[str] = []
    for row in rows:
        if type(row.index) is not int:
            mistyped.append(type(row.index).__name__)
            continue
        if row.index != expected:
            raise CorruptSnapshotError(run_id, expected, f'the snapshot row is missing (the next one is {row.index})')
        expected += 1
    if mistyped:
        raise CorruptSnapshotError(run_id, -1, f'a snapshot index is stored as a {mistyped[0]}, not an integer')
