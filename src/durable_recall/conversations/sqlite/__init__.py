"""The SQLite conversation store: pydantic-ai conversations in one file, shared by a host's processes."""

from __future__ import annotations

from ._entry_log import SqliteEntryLog
from ._store import SqliteConversationStore

__all__ = ('SqliteConversationStore', 'SqliteEntryLog')
