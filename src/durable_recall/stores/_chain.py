"""Turning snapshot deltas into log ranges: the storage layout every store shares.

A store keeps, per run, an append-only *message log* (each message body once, numbered from 0)
and, per snapshot, the list of log ranges that assemble it. A snapshot under sliding-window
compaction is one or two ranges, so storage grows with the number of distinct messages, not with
steps times history length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import SnapshotChainError
from .._records import SnapshotDelta

__all__ = ('LogRange', 'ResolvedSnapshot', 'inline_base', 'ranges_size', 'resolve_delta')

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
        raise SnapshotChainError('a delta with a base run must be inlined (inline_base) before it is resolved')
    previous = previous or []
    previous_size = ranges_size(previous)
    out: list[LogRange] = []
    seq = next_seq
    taken = 0
    for start, end in delta.segments:
        if start >= 0:
            if not start < end <= previous_size:
                raise SnapshotChainError(
                    f'snapshot {delta.index} of run {delta.run_id!r} copies positions {start}..{end} '
                    f'of a previous snapshot of {previous_size} messages'
                )
            for piece in _slice(previous, start, end):
                _append(out, piece)
        else:
            if end <= 0:
                raise SnapshotChainError(f'snapshot {delta.index} of run {delta.run_id!r} has an empty new segment')
            _append(out, (seq, seq + end))
            seq += end
            taken += end
    if taken != len(delta.messages):
        raise SnapshotChainError(
            f'snapshot {delta.index} of run {delta.run_id!r} names {taken} new messages but carries '
            f'{len(delta.messages)}'
        )
    return ResolvedSnapshot(ranges=out, first_new_seq=next_seq, size=ranges_size(out))


def inline_base(delta: SnapshotDelta, base_bodies: Sequence[str] | None) -> SnapshotDelta:
    """Rewrite a delta based on another run's snapshot into one that carries every message itself.

    Each run owns its log (so deleting a run or conversation never touches another), so the
    inherited bodies are copied in; only the durable journal was spared them.

    Args:
        delta: A run's first delta, with `base_run_id` set.
        base_bodies: The message bodies of the base snapshot in order, or `None` if the store
            holds no such snapshot.

    Raises:
        SnapshotChainError: The base snapshot is missing, or the delta is not a first snapshot,
            or a copy segment runs past the base snapshot's end.
    """
    if delta.base_run_id is None:
        return delta
    if delta.index != 0 or base_bodies is None:
        raise SnapshotChainError(
            f'snapshot {delta.index} of run {delta.run_id!r} is based on snapshot {delta.base_index} of run '
            f'{delta.base_run_id!r}, which the store does not hold (only a first snapshot may have a base)'
        )
    bodies: list[str] = []
    fresh = iter(delta.messages)
    for start, end in delta.segments:
        if start >= 0:
            if not start < end <= len(base_bodies):
                raise SnapshotChainError(
                    f'snapshot 0 of run {delta.run_id!r} copies positions {start}..{end} of a base snapshot '
                    f'of {len(base_bodies)} messages'
                )
            bodies.extend(base_bodies[start:end])
        else:
            bodies.extend(next(fresh) for _ in range(end))
    return SnapshotDelta(
        run_id=delta.run_id,
        index=0,
        step_index=delta.step_index,
        state=delta.state,
        segments=[(-1, len(bodies))] if bodies else [],
        messages=bodies,
    )


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
