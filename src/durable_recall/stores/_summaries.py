"""Conversations summarised from run records: the in-memory store's way, and the SQL stores' fallback."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from ..base import RunRecord
from ._protocol import ConversationSummary

__all__ = ('summarize_conversations',)


def summarize_conversations(records: Iterable[RunRecord]) -> tuple[list[ConversationSummary], int]:
    """Each conversation's run count and first and last start, and the number of runs without a conversation."""
    starts: dict[str, list[datetime]] = {}
    loose = 0
    for record in records:
        if record.conversation_id:
            starts.setdefault(record.conversation_id, []).append(record.started_at)
        else:
            loose += 1
    summaries = [
        ConversationSummary(
            conversation_id=conversation_id, runs=len(times), first_started_at=min(times), last_started_at=max(times)
        )
        for conversation_id, times in starts.items()
    ]
    return summaries, loose
