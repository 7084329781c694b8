"""Decoding the rows the SQL stores keep, shared by SQLite and Postgres.

Both stores hold the same tables, so turning a row back into a record, and refusing a row
that cannot be turned back, lives here once. A row that does not decode raises
[`CorruptSnapshotError`][durable_recall.CorruptSnapshotError] naming the run and the snapshot:
a reader must never be handed a history with a silent hole in it.

Writing is shared too: [`BatchWrite`][durable_recall.stores._rows.BatchWrite] checks each delta of a
batch against its run's tip and builds the rows to insert, and a store only reads tips and bases
and runs the inserts. A log row holds a body (JSON text, or compressed bytes, see
`durable_recall._codec`) or a reference `(ref_run_id, ref_seq)` to the row of another run of the
same conversation that holds it; a reference always names a body row, so a read follows one hop.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeGuard, cast

from pydantic_ai.messages import ModelMessage

from ..base import (
    CorruptRunError,
    CorruptSnapshotError,
    MessageDecodeError,
    RunRecord,
    Snapshot,
    SnapshotChainError,
    SnapshotDelta,
    SnapshotState,
    StoredBody,
    decode_body,
    encode_body,
    load_messages,
    parse_timestamp,
)
from ..index import IndexedRunRow
from ._chain import Inherited, LogRange, plan_delta, ranges_size, snapshot_seqs

__all__ = (
    'BaseEntry',
    'BaseLog',
    'BatchWrite',
    'LogRow',
    'RunTip',
    'SnapshotRow',
    'StoredSnapshot',
    'base_entries_at',
    'chain_gap',
    'decode_log',
    'decode_metadata',
    'decode_ranges',
    'decode_snapshot',
    'decode_snapshots',
    'encode_deltas',
    'encode_metadata',
    'encode_ranges',
    'gather_bodies',
    'indexed_run',
    'log_span',
    'run_record',
    'unregistered_run',
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
        saved_at: The stored timestamp: a `datetime` from Postgres, ISO text from SQLite.
        ranges: The stored log ranges as JSON text.
        size: The stored message count, checked against the ranges.
    """

    run_id: str
    index: int
    step_index: int
    state: str
    saved_at: datetime | str
    ranges: str
    size: int

    def is_shown(self, include_interrupted: bool) -> bool:
        """Whether a listing shows the row: anything but a well-formed interrupted row is shown.

        An unknown state is shown rather than filtered out, so that reading it raises instead of
        silently dropping the snapshot.
        """
        return include_interrupted or self.state != 'interrupted'


def encode_metadata(metadata: Mapping[str, str]) -> str:
    """Compact JSON text of a run's labels, keys sorted so equal labels store equal text."""
    return json.dumps(dict(metadata), ensure_ascii=False, separators=(',', ':'), sort_keys=True)


def decode_metadata(run_id: str, text: str) -> dict[str, str]:
    """Parse a run's labels.

    Raises:
        DurableRecallError: The stored text is not a JSON object of strings.
    """
    try:
        value: Any = json.loads(text)
    except ValueError as error:
        raise _corrupt_run(run_id, f'metadata is not JSON ({error})') from error
    if not isinstance(value, dict):
        raise _corrupt_run(run_id, 'metadata is not a JSON object')
    items = cast(dict[Any, Any], value)
    if not all(isinstance(key, str) and isinstance(label, str) for key, label in items.items()):
        raise _corrupt_run(run_id, 'metadata holds a value that is not a string')
    return cast(dict[str, str], items)


def run_record(
    run_id: str,
    conversation_id: str | None,
    parent_run_id: str | None,
    agent_name: str | None,
    metadata: str,
    started_at: datetime | str,
    token: str,
) -> RunRecord:
    """Build a `RunRecord` from the columns of a runs row.

    Raises:
        DurableRecallError: The row's metadata or timestamp cannot be decoded.
    """
    if isinstance(started_at, str):
        try:
            started_at = parse_timestamp(started_at)
        except ValueError as error:
            raise _corrupt_run(run_id, f'started_at is not a timestamp ({error})') from error
    return RunRecord(
        run_id=run_id,
        conversation_id=conversation_id,
        parent_run_id=parent_run_id,
        agent_name=agent_name,
        metadata=decode_metadata(run_id, metadata),
        started_at=started_at,
        token=token,
    )


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
    row: SnapshotRow, log: Mapping[int, StoredBody | None], decoded: dict[int, ModelMessage] | None = None
) -> Snapshot:
    """Assemble a snapshot from its row and the run's log entries.

    Args:
        row: The snapshot row.
        log: Log entries by number; must hold at least every entry the row's ranges name.
        decoded: Entries already decoded, by number, shared by the snapshots of one listing:
            consecutive snapshots hold mostly the same entries, and each is decoded once (the
            snapshots then share those message objects).

    Raises:
        CorruptSnapshotError: The state, timestamp or ranges are malformed, a log entry the ranges
            name is missing, or a message body does not decode.
    """
    state = _decode_state(row)
    saved_at = _decode_saved_at(row)
    ranges = decode_ranges(row.run_id, row.index, row.ranges)
    if ranges_size(ranges) != row.size:
        raise CorruptSnapshotError(
            row.run_id, row.index, f'log ranges assemble {ranges_size(ranges)} messages but the row records {row.size}'
        )
    seqs = snapshot_seqs(ranges)
    decoded = {} if decoded is None else decoded
    missing = [seq for seq in seqs if seq not in decoded]
    if missing:
        bodies = gather_bodies(row.run_id, row.index, _ranges_of(missing), log)
        try:
            decoded.update(zip(missing, load_messages(bodies), strict=True))
        except MessageDecodeError as error:
            raise CorruptSnapshotError(row.run_id, row.index, str(error)) from error
    messages = [decoded[seq] for seq in seqs]
    return Snapshot(
        run_id=row.run_id,
        index=row.index,
        step_index=row.step_index,
        state=state,
        saved_at=saved_at,
        messages=messages,
        seqs=seqs,
    )


def _ranges_of(seqs: Sequence[int]) -> list[LogRange]:
    """Log numbers as ranges (one per number; `gather_bodies` checks each is present)."""
    return [(seq, seq + 1) for seq in seqs]


def decode_snapshots(rows: Sequence[SnapshotRow], log: Mapping[int, StoredBody | None]) -> list[Snapshot]:
    """Assemble a listing's snapshots, decoding each log entry once for all of them."""
    decoded: dict[int, ModelMessage] = {}
    return [decode_snapshot(row, log, decoded) for row in rows]


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


def indexed_run(
    run_key: int,
    run_id: str,
    scope_key: int,
    seen: int,
    first: int,
    lengths: bytes,
    seqs: bytes,
    roles: bytes,
    times: bytes,
    state: str,
    started_at: str = '',
) -> IndexedRunRow:
    """Build an `IndexedRunRow` from the columns of an index runs row, in table order."""
    return IndexedRunRow(
        run_key=run_key,
        run_id=run_id,
        scope_key=scope_key,
        seen=seen,
        first=first,
        lengths=lengths,
        seqs=seqs,
        roles=roles,
        times=times,
        state=state,
        started_at=started_at,
    )


def unregistered_run(run_id: str) -> SnapshotChainError:
    """The error for a delta whose run was never registered (worded as the in-memory store words it)."""
    return SnapshotChainError(f'run {run_id!r} is not registered; register it before saving snapshots')


def chain_gap(delta: SnapshotDelta, next_index: int) -> SnapshotChainError:
    """The error for a delta that skips ahead of the run's next snapshot index."""
    return SnapshotChainError(f'snapshot {delta.index} of run {delta.run_id!r} follows snapshot {next_index - 1}')


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


@dataclass
class RunTip:
    """Where a run's chain stands, as a save checks the next delta against it.

    Attributes:
        run_id: The run.
        conversation_id: Its conversation.
        next_index: The index the next snapshot takes.
        previous_text: The stored log ranges of snapshot `next_index - 1` (decoded when needed).
        next_seq: The number the run's next log entry takes.
    """

    run_id: str
    conversation_id: str | None
    next_index: int
    previous_text: str | None
    next_seq: int
    _previous: list[LogRange] | None = None

    def admits(self, delta: SnapshotDelta) -> bool:
        """Whether the delta is new; `False` when its index is already stored.

        Raises:
            SnapshotChainError: The delta skips ahead of the run's next index.
        """
        if delta.index < self.next_index:
            return False
        if delta.index != self.next_index:
            raise chain_gap(delta, self.next_index)
        return True

    def previous(self) -> list[LogRange] | None:
        """The log ranges of the run's last snapshot, or `None` before its first.

        Raises:
            CorruptSnapshotError: The stored ranges do not decode.
        """
        if self.next_index == 0:
            return None
        if self._previous is None:
            self._previous = decode_ranges(self.run_id, self.next_index - 1, self.previous_text or '')
        return self._previous

    def advance(self, ranges: list[LogRange], appended: int) -> None:
        """Move past a snapshot just stored with `ranges`, which appended `appended` log entries."""
        self.next_index += 1
        self._previous = ranges
        self.next_seq += appended


@dataclass(frozen=True)
class BaseEntry:
    """An entry of a base snapshot, as a save that builds on it needs it.

    Attributes:
        run_id: The run whose log row holds the body (the base run, or the run its reference names).
        seq: That row's log number.
        body: The stored body, when the save copies it (`None` when it refers to the row).
    """

    run_id: str
    seq: int
    body: StoredBody | None = None


@dataclass(frozen=True)
class BaseLog:
    """The base snapshot of a run's first delta.

    Attributes:
        shared: Whether the base run is in the new run's conversation: inherited entries are then
            stored as references, and otherwise as copies, so that deleting a conversation never
            takes a body another conversation needs.
        entries: The snapshot's entries by position.
    """

    shared: bool
    entries: list[BaseEntry]


@dataclass(frozen=True)
class LogRow:
    """A message-log row to insert: a body, or a reference to the row holding it."""

    run_id: str
    seq: int
    body: StoredBody | None
    ref_run_id: str | None = None
    ref_seq: int | None = None


@dataclass(frozen=True)
class StoredSnapshot:
    """A snapshot row to insert."""

    run_id: str
    index: int
    step_index: int
    state: SnapshotState
    saved_at: datetime
    ranges: str
    size: int


def encode_deltas(deltas: Sequence[SnapshotDelta]) -> list[list[StoredBody]]:
    """Each delta's new message bodies as the log stores them (CPU work, done before the transaction)."""
    return [[encode_body(body) for body in delta.messages] for delta in deltas]


@dataclass
class BatchWrite:
    """The rows a batch of deltas appends, built delta by delta against each run's tip.

    A store reads each run's tip (once per batch) and each base, and inserts what `take` hands
    over; the checks and the layout live here. `results` holds, per delta added, whether it was
    new; `pending` the index mark each run with a new snapshot needs (its last index).
    """

    results: list[bool] = field(default_factory=list[bool])
    pending: dict[str, tuple[str, int]] = field(default_factory=dict[str, tuple[str, int]])
    _rows: list[LogRow] = field(default_factory=list[LogRow])
    _snapshots: list[StoredSnapshot] = field(default_factory=list[StoredSnapshot])

    def add(self, tip: RunTip, delta: SnapshotDelta, encoded: Sequence[StoredBody], base: BaseLog | None) -> None:
        """Check a delta against its run's tip and queue its rows (nothing when it is already stored).

        Args:
            tip: The run's tip, advanced here past the delta.
            delta: The delta.
            encoded: Its new message bodies, encoded (`encode_deltas`).
            base: For a first delta with a base: the base snapshot, or `None` if the store holds none.

        Raises:
            SnapshotChainError: The delta does not follow the run's chain, or its base is missing.
            CorruptSnapshotError: The run's last snapshot has ranges that do not decode.
        """
        if not tip.admits(delta):
            self.results.append(False)
            return
        previous = None if delta.base_run_id is not None else tip.previous()
        planned = plan_delta(delta, previous, tip.next_seq, None if base is None else len(base.entries))
        fresh = iter(encoded)
        seq = planned.resolved.first_new_seq
        for entry in planned.entries:
            if not isinstance(entry, Inherited):
                self._rows.append(LogRow(delta.run_id, seq, next(fresh)))
            else:
                assert base is not None, 'plan_delta refuses an inherited entry without a base'
                source = base.entries[entry.position]
                if base.shared:
                    self._rows.append(LogRow(delta.run_id, seq, None, source.run_id, source.seq))
                else:
                    assert source.body is not None, 'a base read for copying holds its bodies'
                    self._rows.append(LogRow(delta.run_id, seq, source.body))
            seq += 1
        self._snapshots.append(
            StoredSnapshot(
                run_id=delta.run_id,
                index=delta.index,
                step_index=delta.step_index,
                state=delta.state,
                saved_at=datetime.now(UTC),
                ranges=encode_ranges(planned.resolved.ranges),
                size=planned.resolved.size,
            )
        )
        tip.advance(planned.resolved.ranges, len(planned.entries))
        self.pending[delta.run_id] = (tip.conversation_id or '', delta.index)
        self.results.append(True)

    def take(self) -> tuple[list[LogRow], list[StoredSnapshot]]:
        """The rows queued since the last call, to insert now."""
        rows, snapshots = self._rows, self._snapshots
        self._rows, self._snapshots = [], []
        return rows, snapshots


def base_entries_at(
    run_id: str, index: int, ranges: Sequence[LogRange], found: Mapping[int, BaseEntry]
) -> list[BaseEntry]:
    """A base snapshot's entries by position, from the base run's log entries read by number.

    Raises:
        CorruptSnapshotError: An entry is missing (or, when copying, its body is).
    """
    entries: list[BaseEntry] = []
    for seq in snapshot_seqs(ranges):
        entry = found.get(seq)
        if entry is None:
            raise CorruptSnapshotError(run_id, index, f'message {seq} of the run log is missing')
        entries.append(entry)
    return entries


def _decode_state(row: SnapshotRow) -> SnapshotState:
    if row.state not in _STATES:
        raise CorruptSnapshotError(row.run_id, row.index, f'unknown state {row.state!r}')
    return cast(SnapshotState, row.state)


def _decode_saved_at(row: SnapshotRow) -> datetime:
    if isinstance(row.saved_at, datetime):
        return row.saved_at
    try:
        return parse_timestamp(row.saved_at)
    except ValueError as error:
        raise CorruptSnapshotError(row.run_id, row.index, f'saved_at is not a timestamp ({error})') from error


def _is_range(item: Any) -> TypeGuard[Sequence[int]]:
    if not isinstance(item, list) or len(cast(list[Any], item)) != 2:
        return False
    first, end = cast(list[Any], item)
    return (
        type(first) is int  # bool is an int subclass; a stored `true` is not a log number
        and type(end) is int
        and 0 <= first < end
    )


def _corrupt_run(run_id: str, reason: str) -> CorruptRunError:
    return CorruptRunError(run_id, reason)
