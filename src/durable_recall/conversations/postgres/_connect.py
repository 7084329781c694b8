"""Reaching Postgres for the conversation store: URL checks, the lazily opened pool, migrations, errors.

The same approach as the Postgres step store's connector (kept apart from it: the layers may not
import each other): a pool opened inside the event loop that uses it, a first connection that fails
fast and says why, and a schema that several workers may try to create at once (an advisory lock).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, LiteralString, Protocol
from urllib.parse import urlsplit, urlunsplit

import anyio

from ...base import StoreConfigurationError, StoreUnavailableError
from .._migrations import POSTGRES_META, POSTGRES_MIGRATIONS, SCHEMA_VERSION, check_version

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor, sql
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

__all__ = ('AsyncConnectionPoolLike', 'PostgresConnector')

_TABLES = (
    'meta',
    'records',
    'branches',
    'entries',
    'runs',
    'index_conversations',
    'pending',
    'index_scopes',
    'index_runs',
    'index_postings',
    'index_hashes',
)
"""The tables' placeholder names in query templates; each table is `drc_<name>`."""

_INSTALL_HINT = 'PostgresConversationStore needs psycopg 3 and psycopg-pool: pip install "durable-recall[postgres]"'
_NAME = 'PostgresConversationStore'


class AsyncConnectionPoolLike(Protocol):
    """What the store needs of a caller-owned pool; `psycopg_pool.AsyncConnectionPool` is one."""

    def connection(self, timeout: float | None = None) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """Lend a connection for the duration of an `async with` block."""
        ...


@dataclass
class _LoopState:
    """The pool and its guard, which belong to the event loop that created them."""

    loop: asyncio.AbstractEventLoop
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    pool: AsyncConnectionPoolLike | None = None
    owned: AsyncConnectionPool[Any] | None = None


class PostgresConnector:
    """Hands out cursors in transactions, opening the pool and migrating the tables on first use."""

    def __init__(
        self,
        url: str | None,
        pool: AsyncConnectionPoolLike | None,
        *,
        schema: str | None,
        connect_timeout: float,
        max_size: int,
    ) -> None:
        """Check the configuration; nothing connects yet.

        Raises:
            StoreConfigurationError: Neither or both of `url` and `pool`, a malformed URL, an unusable
                schema name, or a timeout or pool size out of range.
            ImportError: psycopg is not installed.
        """
        try:
            from psycopg import sql

            if pool is None:
                import psycopg_pool  # noqa: F401  # pyright: ignore[reportUnusedImport]
        except ImportError as error:  # pragma: no cover - exercised only without the extra
            raise ImportError(_INSTALL_HINT) from error
        if (url is None) == (pool is None):
            raise StoreConfigurationError(f'{_NAME}: pass either a `url` or a caller-owned `pool`, not both.')
        if url is not None:
            _check_url(url)
        if schema is not None and not (
            isinstance(schema, str) and 0 < len(schema.encode()) <= 63 and '\x00' not in schema  # pyright: ignore[reportUnnecessaryIsInstance]
        ):
            raise StoreConfigurationError(
                f'{_NAME}: schema {schema!r} is not a usable Postgres identifier: '
                'pass a non-empty name of at most 63 bytes.'
            )
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, int | float) or not connect_timeout > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreConfigurationError(
                f'{_NAME}: connect_timeout must be a number of seconds > 0, got {connect_timeout!r}'
            )
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreConfigurationError(f'{_NAME}: max_size must be an int >= 1, got {max_size!r}')
        self.url = url
        self.schema = schema
        self._caller_pool = pool
        self._connect_timeout = float(connect_timeout)
        self._max_size = max_size
        self._tables = {
            name: sql.Identifier(schema, f'drc_{name}') if schema else sql.Identifier(f'drc_{name}') for name in _TABLES
        }
        self._queries: dict[str, sql.Composed] = {}
        self._state: _LoopState | None = None
        self._schema_ready = False

    def describe(self) -> str:
        """Where the data lives, without secrets."""
        where = _redact(self.url) if self.url is not None else 'caller-owned pool'
        return f'{where!r}, schema={self.schema!r}'

    def sql(self, template: LiteralString) -> sql.Composed:
        """The query `template` with its table placeholders (`{records}`, ...) filled, composed once."""
        query = self._queries.get(template)
        if query is None:
            from psycopg import sql

            query = self._queries[template] = sql.SQL(template).format(**self._tables)
        return query

    def lock_key(self, lineage: str) -> str:
        """The advisory-lock name of a lineage; with the schema in it, two schemas' stores never wait on each other."""
        return f'durable_recall.conversations:{self.schema or ""}:{lineage}'

    @asynccontextmanager
    async def transaction(self, *, snapshot: bool = False) -> AsyncGenerator[AsyncCursor[TupleRow]]:
        """A cursor inside one (read committed) transaction; `snapshot` makes every read see the same moment.

        Raises:
            StoreUnavailableError: The server refused, dropped or did not answer the connection.
        """
        import psycopg
        from psycopg.rows import tuple_row
        from psycopg_pool import PoolTimeout

        try:
            pool = await self._pool()
            async with pool.connection() as conn, conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
                if snapshot:
                    await cur.execute('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
                yield cur
        except (psycopg.OperationalError, PoolTimeout) as error:
            raise self._unavailable(error) from error

    async def aclose(self) -> None:
        """Close the pool this connector opened; a caller-owned pool stays open."""
        state = self._state
        if state is None or state.owned is None or state.loop.is_closed():
            self._state = None
            return
        if state.loop is not asyncio.get_running_loop():
            raise StoreConfigurationError(
                f'{_NAME}({self.describe()}) must be closed from the event loop that uses it.'
            )
        self._state = None
        await state.owned.close()

    async def _pool(self) -> AsyncConnectionPoolLike:
        loop = asyncio.get_running_loop()
        state = self._state
        if state is None or state.loop is not loop:
            if state is not None and state.pool is not None and not state.loop.is_closed():
                raise StoreConfigurationError(
                    f'{_NAME}({self.describe()}) is in use by another running event loop, and its pool cannot '
                    'cross loops: create one store per event loop.'
                )
            state = self._state = _LoopState(loop)
        if state.pool is None:
            async with state.lock:
                if state.pool is None:
                    if self._caller_pool is not None:
                        if not self._schema_ready:
                            async with self._caller_pool.connection() as conn:
                                await self._migrate(conn)
                        state.pool = self._caller_pool
                    else:
                        state.pool = state.owned = await self._open_pool()
        return state.pool

    async def _open_pool(self) -> AsyncConnectionPool[Any]:
        import psycopg
        from psycopg_pool import AsyncConnectionPool, PoolTimeout

        assert self.url is not None, 'a connector without a caller-owned pool has a URL'
        if not self._schema_ready:
            # A direct first connection reports a refusal with the server's reason, which a pool
            # (retrying in the background) would turn into a bare timeout.
            try:
                with anyio.fail_after(self._connect_timeout):
                    conn = await psycopg.AsyncConnection.connect(
                        self.url, autocommit=True, connect_timeout=self._libpq_timeout()
                    )
            except (psycopg.OperationalError, TimeoutError) as error:
                raise self._unavailable(error) from error
            async with conn:
                await self._migrate(conn)
        pool = AsyncConnectionPool(
            self.url,
            min_size=1,
            max_size=self._max_size,
            open=False,
            name='durable-recall-conversations',
            kwargs={'autocommit': True, 'connect_timeout': self._libpq_timeout()},
        )
        try:
            await pool.open(wait=True, timeout=self._connect_timeout)
        except PoolTimeout as error:
            await pool.close()
            raise self._unavailable(error) from error
        return pool

    async def _migrate(self, conn: AsyncConnection[Any]) -> None:
        """Create or upgrade the tables, once per connector, under a lock shared by every worker."""
        from psycopg import sql
        from psycopg.rows import tuple_row

        where = f'Postgres schema {self.schema or "(search path)"!r}'
        async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                'SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))',
                (f'durable_recall.conversations.migrate:{self.schema or ""}',),
            )
            if self.schema is not None:
                # Checked first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when it exists.
                await cur.execute('SELECT 1 FROM pg_namespace WHERE nspname = %s', (self.schema,))
                if await cur.fetchone() is None:
                    await cur.execute(sql.SQL('CREATE SCHEMA IF NOT EXISTS {}').format(sql.Identifier(self.schema)))
            await cur.execute(self.sql(POSTGRES_META))
            await cur.execute(self.sql("SELECT value FROM {meta} WHERE key = 'schema_version'"))
            row = await cur.fetchone()
            recorded = '0' if row is None else str(row[0])
            if not recorded.isdigit():
                raise StoreConfigurationError(
                    f'{where} records conversation schema version {recorded!r}, which is not a number: the tables '
                    'were not written by durable-recall; pass another `schema=`.'
                )
            version = int(recorded)
            check_version(version, where)
            for statements in POSTGRES_MIGRATIONS[version:]:
                for statement in statements:
                    await cur.execute(self.sql(statement))
            if version < SCHEMA_VERSION:
                await cur.execute(
                    self.sql(
                        "INSERT INTO {meta} (key, value) VALUES ('schema_version', %s)"
                        ' ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value'
                    ),
                    (str(SCHEMA_VERSION),),
                )
        self._schema_ready = True

    def _libpq_timeout(self) -> int:
        return max(2, math.ceil(self._connect_timeout))  # libpq takes whole seconds, at least 2

    def _unavailable(self, error: BaseException) -> StoreUnavailableError:
        where = _redact(self.url) if self.url is not None else 'the caller-owned pool'
        reason = ' '.join(str(error).split()) or type(error).__name__
        return StoreUnavailableError(
            f'Postgres at {where} is unavailable ({reason}); no answer within {self._connect_timeout}s or the '
            'connection was refused or dropped. Check that the server is running and reachable and that the '
            "URL's host, port, database and credentials are right; the operation is safe to retry."
        )


def _redact(url: str) -> str:
    """`url` without its password, for messages and reprs."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.rpartition('@')
        user = netloc[0].partition(':')[0]
        return urlunsplit(parts._replace(netloc=f'{user}:***@{netloc[2]}'))
    except ValueError:
        return '(unparsable URL)'


def _check_url(url: object) -> None:
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    if not isinstance(url, str):
        raise StoreConfigurationError(f'{_NAME}: url must be a string, got {type(url).__name__}')
    problem = None
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises for a port that is not a number in range
        if parts.scheme not in ('postgresql', 'postgres'):
            problem = f'the scheme is {parts.scheme!r}, not postgresql:// or postgres://'
        else:
            conninfo_to_dict(url)
    except (ValueError, ProgrammingError) as error:
        problem = str(error).strip()
    if problem is not None:
        raise StoreConfigurationError(
            f'{_NAME}: {_redact(url)!r} is not a usable Postgres URL ({problem}): '
            'pass one like postgresql://user:password@host:5432/database.'
        )
