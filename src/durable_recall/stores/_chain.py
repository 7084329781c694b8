"""Turning snapshot deltas into log ranges: the storage layout every store shares.

A store keeps, per run, an append-only *message log* (each message body once, numbered from 0)
and, per snapshot, the list of log ranges that assemble it. A snapshot under sliding-window
compaction is one or two ranges, so storage grows with the number of distinct messages, not with
steps times history length.

A run's first snapshot may be based on another run's snapshot (the history a conversation's next
run inherits). Its log then starts with the inherited entries, in snapshot order, each naming a
position of the base snapshot ([`Inherited`]); the store
keeps such an entry as a reference to the base run's entry, or as a copy of its body when the base
run belongs to another conversation (see the stores). Either way the run's own log numbering is
the same, so `Snapshot.seqs` and `read_messages` mean own-log numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base import SnapshotDelta

if TYPE_CHECKING:
    pass

__all__ = (
    'Inherited',
    'LogRange',
    'PlannedDelta',
    'ResolvedSnapshot',
    'base_entries',
    'plan_delta',
    'ranges_size',
    'resolve_delta',
    'snapshot_seqs',
)

LogRange = tuple[int, int]
"""`(first, end)`: log entries `first` up to `end` (exclusive) of one run."""


@dataclass(frozen=True)
class ResolvedSnapshot:
    """A delta resolved against the run's log.

    Attributes:
        ranges: The log ranges that assemble the new snapshot, adjacent ranges merged.
        first_new_seq: The log number the first new message gets.
        size: The number of messages in the snapshot.
    """

    ranges: list[LogRange]
    first_new_seq: int
    size: int


@dataclass(frozen=True)
class Inherited:
    """A log entry that a run's first snapshot takes from its base snapshot.

    Attributes:
        position: The entry's position in the base snapshot.
    """

    position: int


@dataclass(frozen=True)
class PlannedDelta:
    """What storing a delta appends to the run's log, and the snapshot it makes.

    Attributes:
        entries: The log entries to append from `resolved.first_new_seq` on, in order: a new
            message body, or an entry inherited from the base snapshot.
        resolved: The new snapshot's log ranges.
    """

    entries: list[str | Inherited]
    resolved: ResolvedSnapshot


def ranges_size(ranges: Sequence[LogRange]) -> int:
    """The number of messages a list of log ranges assembles."""
    return sum(end - first for first, end in ranges)


def resolve_delta(delta: SnapshotDelta, previous: Sequence[LogRange] | None, next_seq: int) -> ResolvedSnapshot:
    """Map a delta's segments onto log ranges.

    Args:
        delta: The delta to store.
        previous: The log ranges of the run's snapshot `delta.index - 1`, or `None` for the first.
        next_seq: The number the run's next log entry gets.

    Raises:
        SnapshotChainError: The delta copies from a snapshot that does not exist or past its end,
            or its new-message counts do not add up to the messages it carries.
    """
    if delta.base_run_id is not None:
        from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

        raise SnapshotChainError('a delta with a base run must be inlined (plan_delta) before it is resolved')
    previous = previous or []
    previous_size = ranges_size(previous)
    out: list[LogRange] = []
    seq = next_seq
    taken = 0
    for start, end in delta.segments:
        if start >= 0:
            if not start < end <= previous_size:
                from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

                raise SnapshotChainError(
                    f'snapshot {delta.index} of run {delta.run_id!r} copies positions {start}..{end} '
                    f'of a previous snapshot of {previous_size} messages'
                )
            for piece in _slice(previous, start, end):
                _append(out, piece)
        else:
            if end <= 0:
                from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

                raise SnapshotChainError(f'snapshot {delta.index} of run {delta.run_id!r} has an empty new segment')
            _append(out, (seq, seq + end))
            seq += end
            taken += end
    if taken != len(delta.messages):
        from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

        raise SnapshotChainError(
            f'snapshot {delta.index} of run {delta.run_id!r} names {taken} new messages but carries '
            f'{len(delta.messages)}'
        )
    return ResolvedSnapshot(ranges=out, first_new_seq=next_seq, size=ranges_size(out))


def plan_delta(
    delta: SnapshotDelta, previous: Sequence[LogRange] | None, next_seq: int, base_size: int | None = None
) -> PlannedDelta:
    """The log entries a delta appends and the snapshot it makes.

    Args:
        delta: The delta to store.
        previous: The log ranges of the run's snapshot `delta.index - 1`, or `None` for the first.
        next_seq: The number the run's next log entry gets.
        base_size: For a delta with a base: the number of messages in the base snapshot, or
            `None` if the store holds no such snapshot.

    Raises:
        SnapshotChainError: As `resolve_delta` and `base_entries` say.
    """
    if delta.base_run_id is None:
        return PlannedDelta(list(delta.messages), resolve_delta(delta, previous, next_seq))
    entries = base_entries(delta, base_size)
    ranges = [(next_seq, next_seq + len(entries))] if entries else []
    return PlannedDelta(entries, ResolvedSnapshot(ranges=ranges, first_new_seq=next_seq, size=len(entries)))


def base_entries(delta: SnapshotDelta, base_size: int | None) -> list[str | Inherited]:
    """The log entries of a run's first delta that is based on another run's snapshot, in snapshot order.

    Args:
        delta: A run's first delta, with `base_run_id` set.
        base_size: The number of messages in the base snapshot, or `None` if the store holds no
            such snapshot.

    Raises:
        SnapshotChainError: The base snapshot is missing, or the delta is not a first snapshot,
            or a copy segment runs past the base snapshot's end, or the new-message counts do not
            add up to the messages the delta carries.
    """
    if delta.index != 0 or base_size is None:
        from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

        raise SnapshotChainError(
            f'snapshot {delta.index} of run {delta.run_id!r} is based on snapshot {delta.base_index} of run '
            f'{delta.base_run_id!r}, which the store does not hold (only a first snapshot may have a base)'
        )
    entries: list[str | Inherited] = []
    taken = 0
    for start, end in delta.segments:
        if start >= 0:
            if not start < end <= base_size:
                from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

                raise SnapshotChainError(
                    f'snapshot 0 of run {delta.run_id!r} copies positions {start}..{end} of a base snapshot '
                    f'of {base_size} messages'
                )
            entries.extend(Inherited(position) for position in range(start, end))
        else:
            if end <= 0:
                from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

                raise SnapshotChainError(f'snapshot 0 of run {delta.run_id!r} has an empty new segment')
            entries.extend(delta.messages[taken : taken + end])
            taken += end
    if taken != len(delta.messages):
        from ..base import SnapshotChainError  # loads pydantic-ai (see base._errors)

        raise SnapshotChainError(
            f'snapshot 0 of run {delta.run_id!r} names {taken} new messages but carries {len(delta.messages)}'
        )
    return entries


def snapshot_seqs(ranges: Sequence[LogRange]) -> list[int]:
    """The log number of each message of the snapshot that `ranges` assemble, in order."""
    return [seq for first, end in ranges for seq in range(first, end)]


def _slice(ranges: Sequence[LogRange], start: int, end: int) -> list[LogRange]:
    """The log ranges behind positions `start..end` of the snapshot that `ranges` assemble."""
    pieces: list[LogRange] = []
    offset = 0
    for first, stop in ranges:
        length = stop - first
        lo, hi = max(start, offset), min(end, offset + length)
        if lo < hi:
            pieces.append((first + lo - offset, first + hi - offset))
        offset += length
        if offset >= end:
            break
    return pieces


def _append(out: list[LogRange], piece: LogRange) -> None:
    if out and out[-1][1] == piece[0]:
        out[-1] = (out[-1][0], piece[1])
    else:
        out.append(piece)
