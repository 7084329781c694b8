"""A damaged search index, as a search meets it: what damage raises, and how an answer names it.

The index is derived data: damage to it (a counter out of range, bytes that no longer decode, a
posting naming a position a run does not have) loses nothing a rebuild cannot restore from the
snapshots. So a search never raises on it: the ranker leaves out what is damaged and the answer
names the damage, with the repair, in the note that names unreadable runs.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from ..base import CorruptRunError, CorruptSnapshotError
from ..index import IndexedRunRow, IndexStorage, array_length, decode_ints

__all__ = ('DAMAGE', 'Problems', 'note_damage', 'recount', 'size_of', 'time_at')

DAMAGE = (ValueError, ArithmeticError, IndexError, KeyError, struct.error, zlib.error)
"""What damaged index bytes or counts raise when decoded or used (a store's own errors are caught apart)."""

Problems = list[CorruptSnapshotError | CorruptRunError]
"""What an answer names as not read (`Ranker.unreadable`)."""

_INDEX = '(search index)'
"""How the note names the index, where it names a run for a snapshot that does not read."""

_REPAIR = 'run `durable-recall check --rebuild-index` to rebuild it from the snapshots'


def note_damage(problems: Problems, what: str) -> None:
    """Add the damage `what` to an answer's unreadable list, once, with the repair."""
    reason = f'the search index is damaged: {what}; {_REPAIR}'
    if not any(problem.reason == reason for problem in problems):
        problems.append(CorruptRunError(_INDEX, reason))


async def recount(storage: IndexStorage, conversation_id: str | None, *, all_scopes: bool) -> tuple[int, int]:
    """A scope's documents and total length from its run rows, for when the stored counters are out of range.

    `(0, 0)` when the rows do not decode either: the search then finds nothing and says why.
    """
    rows = await storage.scope_runs(conversation_id, all_scopes=all_scopes)
    try:
        counted = [list(decode_ints(row.lengths))[max(row.first, 0) :] for row in rows]
    except DAMAGE:
        return 0, 0
    return sum(map(len, counted)), sum(map(sum, counted))


def time_at(times: Sequence[float], position: int) -> float:
    """A message's time, or 0 (the epoch) where a damaged row has none: an order must still be total."""
    return times[position] if 0 <= position < len(times) else 0.0


def size_of(problems: Problems, row: IndexedRunRow) -> int:
    """A run's record length from its index row; 0 (and the damage noted) when it does not decode."""
    try:
        return array_length(row.lengths)
    except DAMAGE as error:
        note_damage(problems, f'the row of run {row.run_id!r} does not decode ({error})')
        return 0
