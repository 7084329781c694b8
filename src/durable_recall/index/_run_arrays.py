"""A run's per-position columns (lengths, log numbers, roles, times) as catch-up reads and changes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base import RunRecord
from ..text import message_role
from ._layout import ROLE_CODES, decode_floats, decode_ints
from ._storage import IndexedRunRow

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('RunArrays', 'own_documents', 'put_position')


@dataclass
class RunArrays:
    """A run's per-position columns as catch-up changes them (`IndexedRunRow`'s, decoded)."""

    lengths: list[int]
    seqs: list[int]
    roles: list[int]
    times: list[float]

    @classmethod
    def of(cls, row: IndexedRunRow | None) -> RunArrays:
        """The run's columns as its index row holds them (empty for a run never indexed)."""
        if row is None:
            return cls([], [], [], [])
        return cls(
            list(decode_ints(row.lengths)),
            list(decode_ints(row.seqs)),
            list(decode_ints(row.roles)),
            list(decode_floats(row.times)),
        )


def put_position(
    arrays: RunArrays, position: int, length: int, seq: int, message: ModelMessage, run: RunRecord
) -> None:
    """Set (or append) a position's length, log number, role and time (the message's, else the run's start)."""
    role = ROLE_CODES[message_role(message)]
    moment = (message.timestamp or run.started_at).timestamp()
    if position == len(arrays.lengths):
        arrays.lengths.append(length)
        arrays.seqs.append(max(seq, 0))
        arrays.roles.append(role)
        arrays.times.append(moment)
    else:
        arrays.lengths[position] = length
        arrays.seqs[position] = max(seq, 0)
        arrays.roles[position] = role
        arrays.times[position] = moment


def own_documents(arrays: RunArrays, first: int) -> tuple[int, int]:
    """The run's searchable documents and their total length (positions from `first` on)."""
    return max(len(arrays.lengths) - first, 0), sum(arrays.lengths[first:])
