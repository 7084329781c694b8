"""Connections worth lending: the pool a store uses, and a look at each connection before it is lent.

Kept apart from `_connect` (the pool's opening, migrations and errors): this is the part every
operation goes through, and the one a restarted server tests.
"""

from __future__ import annotations

import select
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ('AsyncConnectionPoolLike', 'live_connection')


class AsyncConnectionPoolLike(Protocol):
    """What the store needs of a caller-owned pool; `psycopg_pool.AsyncConnectionPool` is one."""

    def connection(self, timeout: float | None = None) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """Lend a connection for the duration of an `async with` block."""
        ...


@asynccontextmanager
async def live_connection(pool: AsyncConnectionPoolLike, max_size: int) -> AsyncGenerator[AsyncConnection[Any]]:
    """A connection from `pool` that is not one a restarted server left behind.

    When Postgres restarts (or a backend is terminated), the pool's idle connections are dead,
    and the first operation on each would fail although the server is back. Each borrowed
    connection is therefore looked at first: a healthy idle connection has nothing to read, while
    the server's goodbye (an error message, then end of file) makes its socket readable. That look
    is a system call, not a round trip, so warm operations pay nothing; a connection that shows
    it is answered with a real round trip (`SELECT` of nothing), and a dead one goes back to the
    pool, which discards it, before the next is tried. A connection cut silently (no FIN) is not
    seen here: the operation fails, as a retryable `StoreUnavailableError`.
    """
    import psycopg

    for attempt in range(max_size + 1):
        async with pool.connection() as conn:
            if attempt < max_size and _suspect(conn):
                try:
                    await conn.execute('')
                except (psycopg.OperationalError, psycopg.InterfaceError):
                    continue  # leaving the block returns it broken: the pool drops it
            yield conn
            return
    raise AssertionError('unreachable: the last attempt yields')  # pragma: no cover


def _suspect(conn: AsyncConnection[Any]) -> bool:
    """Whether an idle connection may be dead: closed, broken, or with unread input from the server."""
    if conn.closed or conn.broken:
        return True
    try:
        ready, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):  # a descriptor select cannot watch: ask the server instead
        return True
    return bool(ready)
