"""Expressing a run's new history as a change to the history it last saved.

The capability keeps the message objects of its last saved snapshot. Core appends to the same list
and compaction rebuilds lists from the same objects, so identity finds what is unchanged; an equal
but re-created message is matched at the position that follows the previous match. Everything
else is new. Only the new messages cross the durable boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage

from ..base import Segment

__all__ = ('HistoryDiff', 'diff_history', 'is_identity')


@dataclass(frozen=True)
class HistoryDiff:
    """How to build `current` from `previous`.

    Attributes:
        segments: Copies of previous positions and runs of new messages (see `Segment`).
        new_messages: The messages the segments take, in order.
    """

    segments: list[Segment]
    new_messages: list[ModelMessage]


def diff_history(previous: Sequence[ModelMessage], current: Sequence[ModelMessage]) -> HistoryDiff:
    """Compute the segments that turn `previous` into `current`.

    Costs one dictionary lookup per current message, plus one equality check for a message that
    is not the same object as any previous one.
    """
    positions = {id(message): index for index, message in enumerate(previous)}
    segments: list[Segment] = []
    new_messages: list[ModelMessage] = []
    expected = 0
    for message in current:
        position = positions.get(id(message))
        if position is None and expected < len(previous) and previous[expected] == message:
            position = expected
        if position is None:
            new_messages.append(message)
            _extend(segments, (-1, 1))
        else:
            _extend(segments, (position, position + 1))
            expected = position + 1
    return HistoryDiff(segments=segments, new_messages=new_messages)


def is_identity(diff: HistoryDiff, previous_length: int) -> bool:
    """Whether the diff rebuilds exactly the previous snapshot."""
    if diff.new_messages:
        return False
    if previous_length == 0:
        return not diff.segments
    return diff.segments == [(0, previous_length)]


def _extend(segments: list[Segment], piece: Segment) -> None:
    if segments:
        start, end = segments[-1]
        if start < 0 and piece[0] < 0:
            segments[-1] = (-1, end + piece[1])
            return
        if start >= 0 and piece[0] == end:
            segments[-1] = (start, piece[1])
            return
    segments.append(piece)
