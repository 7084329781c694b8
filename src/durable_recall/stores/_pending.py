"""The index's pending marks as stored, for `durable-recall check` (which reads the index's view otherwise).

A save marks its run pending (`dr_pending`: conversation, run, the last snapshot index saved) in
its own transaction; a catch-up clears the mark once the index has read that far. The index's own
reads join the marks with the run rows, so a mark whose run is gone (or filed under another
conversation) is invisible to them: it would never be caught up, and its run id would stay in the
table after the run was erased. `check` reads the marks raw and names such rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ('PendingMark', 'PendingMarks', 'pending_mark_problem')


@dataclass(frozen=True)
class PendingMark:
    """A pending row as stored, with what the store holds of its run.

    Attributes:
        conversation_id: The conversation the mark is filed under (`''` for none).
        run_id: The run marked.
        upto: The last snapshot index the mark says is saved.
        run_found: Whether the run row exists.
        run_conversation_id: The run's conversation id (`None`: none, or no run row).
        last_snapshot: The run's last stored snapshot index (`None`: it has none).
    """

    conversation_id: str
    run_id: str
    upto: int
    run_found: bool
    run_conversation_id: str | None
    last_snapshot: int | None


@runtime_checkable
class PendingMarks(Protocol):
    """A store whose pending marks can be read as stored (the SQL stores)."""

    async def pending_marks(self) -> list[PendingMark]:
        """Every pending row, with its run's conversation and last snapshot."""
        ...


def pending_mark_problem(mark: PendingMark) -> str | None:
    """What is wrong with a pending mark, or `None`."""
    if not mark.run_found:
        return f'a pending mark (conversation {mark.conversation_id!r}) names a run the store does not hold'
    if mark.conversation_id != (mark.run_conversation_id or ''):
        return (
            f'its pending mark is filed under conversation {mark.conversation_id!r}, but the run belongs to '
            f'{mark.run_conversation_id!r}: the index never catches it up'
        )
    if mark.last_snapshot is None:
        return 'it is marked pending, but has no snapshots'
    if type(mark.upto) is not int:  # SQLite keeps whatever type a damaged file holds (its type scan names it)
        return f'its pending mark records a {type(mark.upto).__name__} where a snapshot index belongs'
    if mark.upto > mark.last_snapshot:
        return (
            f'its pending mark says snapshots up to {mark.upto} were saved, but the last one stored is '
            f'{mark.last_snapshot}'
        )
    return None
