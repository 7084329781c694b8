"""The SQLite conversation store: pydantic-ai conversations in one file, shared by a host's processes."""

from __future__ import annotations

from ._store import SqliteConversationStore

__all__ = ('SqliteConversationStore',)
