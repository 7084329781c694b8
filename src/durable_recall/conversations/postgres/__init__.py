"""The Postgres conversation store: the one home of psycopg in this package, loaded only when asked for."""

from __future__ import annotations

from ...stores.postgres import AsyncConnectionPoolLike
from ._entry_log import PostgresEntryLog
from ._store import PostgresConversationStore

__all__ = ('AsyncConnectionPoolLike', 'PostgresConversationStore', 'PostgresEntryLog')
