"""Planning a batch of snapshot writes: the rows a store inserts, checked against each run's tip.

Writing is shared by the SQL stores: [`BatchWrite`]
checks each delta of a batch against its run's tip and builds the rows to insert, and a store only
reads tips and bases and runs the inserts. A log row holds a body (JSON text, or compressed bytes,
see `durable_recall.base._codec`); the entries a run inherits from a run of its own conversation
are reference ranges instead (see `durable_recall.stores._log_refs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..base import CorruptSnapshotError, SnapshotDelta, SnapshotState, StoredBody, encode_body
from ._chain import Inherited, LogRange, plan_delta, snapshot_seqs
from ._log_refs import BaseEntry, RefRange, reference_ranges
from ._snapshot_rows import decode_ranges, encode_ranges

if TYPE_CHECKING:
    from ..base import SnapshotChainError

__all__ = (
    'BaseLog',
    'BatchWrite',
    'LogRow',
    'RunTip',
    'StoredSnapshot',
    'base_entries_at',
    'chain_gap',
    'encode_deltas',
    'unregistered_run',
)


def unregistered_run(run_id: str) -> SnapshotChainError:
    """The error for a delta whose run was never registered (worded as the in-memory store words it)."""
    from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

    return SnapshotChainError(f'run {run_id!r} is not registered; register it before saving snapshots')


def chain_gap(delta: SnapshotDelta, next_index: int) -> SnapshotChainError:
    """The error for a delta that skips ahead of the run's next snapshot index."""
    from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

    return SnapshotChainError(f'snapshot {delta.index} of run {delta.run_id!r} follows snapshot {next_index - 1}')


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
    """A message-log row to insert: an entry with a body of its own."""

    run_id: str
    seq: int
    body: StoredBody


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
    _refs: list[RefRange] = field(default_factory=list[RefRange])
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
        inherited: list[tuple[int, BaseEntry]] = []
        for entry in planned.entries:
            if not isinstance(entry, Inherited):
                self._rows.append(LogRow(delta.run_id, seq, next(fresh)))
            else:
                assert base is not None, 'plan_delta refuses an inherited entry without a base'
                source = base.entries[entry.position]
                if base.shared:
                    inherited.append((seq, source))
                else:
                    assert source.body is not None, 'a base read for copying holds its bodies'
                    self._rows.append(LogRow(delta.run_id, seq, source.body))
            seq += 1
        if inherited:
            assert delta.base_run_id is not None, 'only a delta with a base inherits'
            self._refs.extend(reference_ranges(delta.run_id, delta.base_run_id, inherited))
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

    def take(self) -> tuple[list[LogRow], list[RefRange], list[StoredSnapshot]]:
        """The rows queued since the last call (log rows, reference ranges, snapshots), to insert now."""
        rows, refs, snapshots = self._rows, self._refs, self._snapshots
        self._rows, self._refs, self._snapshots = [], [], []
        return rows, refs, snapshots


def base_entries_at(
    run_id: str, index: int, ranges: Sequence[LogRange], found: Mapping[int, BaseEntry]
) -> list[BaseEntry]:
    """A base snapshot's entries by position, from the base run's log entries read by number.

    Raises:
        CorruptSnapshotError: An entry is missing, or its body is (a store leaves those out).
    """
    entries: list[BaseEntry] = []
    for seq in snapshot_seqs(ranges):
        entry = found.get(seq)
        if entry is None:
            raise CorruptSnapshotError(run_id, index, f'message {seq} of the run log is missing')
        entries.append(entry)
    return entries
