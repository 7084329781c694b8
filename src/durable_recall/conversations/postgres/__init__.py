"""The Postgres conversation store: the one home of psycopg in this package, loaded only when asked for."""

from __future__ import annotations

from ._connect import AsyncConnectionPoolLike
from ._store import PostgresConversationStore

__all__ = ('AsyncConnectionPoolLike', 'PostgresConversationStore')
