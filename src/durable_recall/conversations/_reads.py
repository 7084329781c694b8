"""Turning the SQL stores' rows into records and histories, with the checks both dialects share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.exceptions import UserError

from ._api import RECORD_HAS_DETAILS, ConversationEntry, ConversationRecord
from ._rows import decode_entry, decode_record

__all__ = ('check_details', 'check_limit', 'decode_history', 'decode_records')


def check_limit(limit: int | None) -> None:
    """Refuse a negative `limit` as pydantic-ai's store does, before any query.

    Raises:
        UserError: `limit` is negative.
    """
    if limit is not None and limit < 0:
        raise UserError('`limit` must not be negative.')


def check_details(store: str) -> None:
    """Refuse `write_details` where the installed `ConversationRecord` cannot carry what it writes.

    Raises:
        NotImplementedError: pydantic-ai is older than 2.78 (as core's default `write_details` does).
    """
    if not RECORD_HAS_DETAILS:
        raise NotImplementedError(
            f'{store}.write_details needs pydantic-ai-slim>=2.78, whose ConversationRecord has `title` and '
            '`metadata`: the installed one has not.'
        )


def decode_records(rows: Sequence[tuple[Sequence[Any], Sequence[str]]]) -> list[ConversationRecord]:
    """Records from `(record row, branch tips)` pairs."""
    return [decode_record(row, branches) for row, branches in rows]


def decode_history(head_id: str, rows: Sequence[Sequence[Any]], limit: int | None) -> list[ConversationEntry]:
    """The entries of a history read oldest first, checked to be whole.

    Raises:
        KeyError: The head is missing, or the chain stops at an entry whose parent is missing
            (what a concurrent delete leaves a reader that read the record before it).
    """
    if not rows:
        raise KeyError(head_id)
    if (limit is None or len(rows) < limit) and rows[0][1] is not None:
        raise KeyError(rows[0][1])
    return [decode_entry(row[0], row[1], row[2], row[3]) for row in rows]
