"""Reaching Postgres for the stores: URL checks, the lazily opened pool, migrations, and errors.

Kept apart from the queries (`_reads`, `_writes`, `_index`) because it is where the awkward parts
live: a pool that must be opened inside the event loop that uses it, a first connection that must
fail fast and say why, dead connections a restarted server left in the pool, and a schema that
several workers may try to create at once.

The step store and the conversation store (`durable_recall.conversations`, a layer above) both
reach Postgres through `PostgresConnector`; what differs between them is only which tables it
names, creates and migrates, described by a `PostgresTables` (`_tables`; `STEP_TABLES` for the
step store's `dr_*`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, LiteralString

import anyio

from ...base import StoreUnavailableError
from .._url import redact_url
from ._config import check_config
from ._handover import handing_over
from ._live import AsyncConnectionPoolLike, live_connection
from ._tables import STEP_TABLES, TABLES, PostgresTables

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor, sql
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

__all__ = ('STEP_TABLES', 'TABLES', 'AsyncConnectionPoolLike', 'PostgresConnector', 'PostgresTables')


@dataclass
class _LoopState:
    """The pool and its guard, which belong to the event loop that created them."""

    loop: asyncio.AbstractEventLoop
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    pool: AsyncConnectionPoolLike | None = None
    owned: AsyncConnectionPool[Any] | None = None


class PostgresConnector:
    """Hands out cursors (in transactions, or for single reads), opening the pool and migrating on first use."""

    def __init__(
        self,
        url: str | None,
        pool: AsyncConnectionPoolLike | None,
        *,
        schema: str | None,
        connect_timeout: float,
        max_size: int,
        tables: PostgresTables = STEP_TABLES,
    ) -> None:
        """Check the configuration; nothing connects yet.

        Args:
            url: A `postgresql://` (or `postgres://`) URL; the connector opens its own pool.
            pool: A caller-owned pool, used instead of `url` and never closed here.
            schema: The Postgres schema of the tables (created if missing), or `None` for the search path.
            connect_timeout: Seconds to wait for the server (or for a connection from the pool).
            max_size: The most connections the connector's own pool opens.
            tables: The tables this connector names, creates and migrates.

        Raises:
            StoreConfigurationError: Neither or both of `url` and `pool`, a malformed URL, an unusable
                schema name, or a timeout or pool size out of range.
            ImportError: psycopg is not installed.
        """
        store = tables.store
        try:
            from psycopg import sql

            if pool is None:
                # The store opens its own pool on first use: import it now, with the store, so a
                # worker's first search or save does not pay the import (tens of milliseconds).
                import psycopg_pool  # noqa: F401  # pyright: ignore[reportUnusedImport]
        except ImportError as error:  # pragma: no cover - exercised only without the extra
            raise ImportError(
                f'{store} needs psycopg 3 and psycopg-pool: pip install "durable-recall[postgres]"'
            ) from error
        check_config(store, url, pool, schema, connect_timeout, max_size)
        self.url = url
        self.schema = schema
        self.tables = tables
        self._caller_pool = pool
        self._connect_timeout = connect_timeout
        self._max_size = max_size
        self._identifiers = {
            name: sql.Identifier(schema, f'{tables.prefix}{name}')
            if schema
            else sql.Identifier(f'{tables.prefix}{name}')
            for name in tables.names
        }
        self._queries: dict[str, sql.Composed] = {}
        self._state: _LoopState | None = None
        self._schema_ready = False

    def describe(self) -> str:
        """Where the data lives, without secrets."""
        where = redact_url(self.url) if self.url is not None else 'caller-owned pool'
        return f'{where!r}, schema={self.schema!r}'

    def sql(self, template: LiteralString) -> sql.Composed:
        """The query `template` with its table placeholders (`{runs}`, ..., `PostgresTables.names`) filled, once."""
        query = self._queries.get(template)
        if query is None:
            from psycopg import sql

            query = self._queries[template] = sql.SQL(template).format(**self._identifiers)
        return query

    @asynccontextmanager
    async def transaction(
        self, *, snapshot: bool = False, pipeline: bool = False
    ) -> AsyncGenerator[AsyncCursor[TupleRow]]:
        """A cursor inside one transaction; `snapshot` makes every read see the same moment.

        `pipeline`: statements are sent without waiting for the previous one's answer (a fetch
        waits); with a libpq that cannot pipeline, they are sent one at a time.

        Raises:
            StoreUnavailableError: The server refused, dropped or did not answer the connection.
        """
        async with self._cursor(transaction=True, snapshot=snapshot, pipeline=pipeline) as cur:
            yield cur

    @asynccontextmanager
    async def read(self) -> AsyncGenerator[AsyncCursor[TupleRow]]:
        """A cursor for reads that each need only their own statement's view, outside a transaction.

        A statement on an autocommit connection is a transaction of its own, with its snapshot: as
        consistent as the same statement between `BEGIN` and `COMMIT` at Postgres's default
        isolation (read committed), without the two round trips those cost. A search makes half a
        dozen such reads (status, postings, run rows, records, log bodies), and the `BEGIN` and
        `COMMIT` around each cost more than the read (0.35 ms a read on an idle loopback here).
        Reads whose statements must see one moment use `transaction(snapshot=True)`. A caller-owned
        pool whose connections are not autocommit gets a transaction as before, so that no
        connection goes back to it inside one.

        Raises:
            StoreUnavailableError: The server refused, dropped or did not answer the connection.
        """
        async with self._cursor(transaction=False, snapshot=False) as cur:
            yield cur

    @asynccontextmanager
    async def _cursor(
        self, *, transaction: bool, snapshot: bool, pipeline: bool = False
    ) -> AsyncGenerator[AsyncCursor[TupleRow]]:
        import psycopg
        from psycopg.rows import tuple_row
        from psycopg_pool import PoolTimeout

        try:
            pool = await self._pool()
            async with live_connection(pool, self._max_size) as conn:
                if not transaction and conn.autocommit:
                    async with conn.cursor(row_factory=tuple_row) as cur:
                        yield cur
                    return
                piped = pipeline and psycopg.AsyncPipeline.is_supported()
                try:
                    async with (
                        conn.pipeline() if piped else nullcontext(),
                        conn.transaction(),
                        conn.cursor(row_factory=tuple_row) as cur,
                    ):
                        if snapshot:
                            await cur.execute('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
                        yield cur
                except BaseException:
                    if piped:
                        # A pipeline cut short (a cancelled task, an error) may leave answers unread
                        # or its transaction open: closed, the pool replaces it instead of lending it so.
                        await conn.close()
                    raise
        except (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout) as error:
            # InterfaceError: a connection the server closed, used again (psycopg's word for it).
            raise self._unavailable(error) from error

    async def aclose(self) -> None:
        """Close the pool this connector opened; a caller-owned pool stays open."""
        state = self._state
        if state is None or state.owned is None or state.loop.is_closed():
            self._state = None  # a pool whose loop has closed cannot be closed; its sockets go with it
            return
        if state.loop is not asyncio.get_running_loop():
            from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

            raise StoreConfigurationError(
                f'{self.tables.store}({self.describe()}) must be closed from the event loop that uses it.'
            )
        self._state = None
        await state.owned.close()

    async def _pool(self) -> AsyncConnectionPoolLike:
        loop = asyncio.get_running_loop()
        state = self._state
        if state is None or state.loop is not loop:
            if state is not None and state.pool is not None and not state.loop.is_closed():
                from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

                raise StoreConfigurationError(
                    f'{self.tables.store}({self.describe()}) is in use by another running event loop, and its '
                    'pool cannot cross loops: create one store per event loop.'
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
        connection_class, waiting = handing_over()
        pool = AsyncConnectionPool(
            self.url,
            connection_class=connection_class,
            min_size=1,
            max_size=self._max_size,
            open=False,
            name=self.tables.pool_name,
            # A borrow that waits longer than a connection may take is an outage (or a pool
            # exhausted for as long): either way a retryable StoreUnavailableError, not a 30 s hang.
            timeout=self._connect_timeout,
            kwargs={'autocommit': True, 'connect_timeout': self._libpq_timeout()},
        )
        try:
            if not self._schema_ready:
                # A direct first connection reports a refusal with the server's reason, which a pool
                # (retrying in the background) would turn into a bare timeout, and log besides.
                try:
                    with anyio.fail_after(self._connect_timeout):
                        conn = await connection_class.connect(
                            self.url, autocommit=True, connect_timeout=self._libpq_timeout()
                        )
                except (psycopg.OperationalError, TimeoutError) as error:
                    raise self._unavailable(error) from error
                try:
                    await self._migrate(conn)
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await conn.close()
                    raise
                # Checked: it becomes the pool's first connection (`_handover`), not a second connect.
                waiting.append(conn)
                await pool.open(wait=False)
            else:
                await pool.open(wait=False)
            await pool.wait(timeout=self._connect_timeout)
        except BaseException as error:
            with anyio.CancelScope(shield=True):
                await pool.close()
                for conn in waiting:  # not taken by the pool
                    await conn.close()
            if isinstance(error, PoolTimeout):
                raise self._unavailable(error) from error
            raise
        return pool

    async def _migrate(self, conn: AsyncConnection[Any]) -> None:
        """Create or upgrade the tables, once per connector, under a lock shared by every worker."""
        from psycopg import sql
        from psycopg.rows import tuple_row

        tables = self.tables
        where = f'Postgres schema {self.schema or "(search path)"!r}'
        if conn.autocommit and await self._current(conn, where):
            self._schema_ready = True
            return
        async with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                'SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))',
                (f'{tables.migrate_lock}:{self.schema or ""}',),
            )
            if self.schema is not None:
                # Checked first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when it exists.
                await cur.execute('SELECT 1 FROM pg_namespace WHERE nspname = %s', (self.schema,))
                if await cur.fetchone() is None:
                    await cur.execute(sql.SQL('CREATE SCHEMA IF NOT EXISTS {}').format(sql.Identifier(self.schema)))
            await cur.execute(self.sql(tables.meta))
            await cur.execute(self.sql("SELECT value FROM {meta} WHERE key = 'schema_version'"))
            row = await cur.fetchone()
            recorded = '0' if row is None else str(row[0])
            if not recorded.isdigit():
                from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

                raise StoreConfigurationError(
                    f'{where} records {tables.version_name} {recorded!r}, which is not a number: the tables were '
                    'not written by durable-recall; pass another `schema=`.'
                )
            version = int(recorded)
            tables.check_version(version, where)
            for statements in tables.migrations[version:]:
                for statement in statements:
                    await cur.execute(self.sql(statement))
            if version < tables.version:
                await cur.execute(
                    self.sql(
                        "INSERT INTO {meta} (key, value) VALUES ('schema_version', %s)"
                        ' ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value'
                    ),
                    (str(tables.version),),
                )
        self._schema_ready = True

    async def _current(self, conn: AsyncConnection[Any], where: str) -> bool:
        """Whether the tables are already at this release's version: one read, no lock, nothing written.

        Nearly every process finds them so; only the others take the migration lock. A newer
        version is refused here as under the lock. A schema or meta table that does not exist yet
        (the read fails; in autocommit, so nothing is left aborted) or an older version is `False`.
        """
        import psycopg

        try:
            cur = await conn.execute(self.sql("SELECT value FROM {meta} WHERE key = 'schema_version'"))
            row = await cur.fetchone()
        except psycopg.errors.UndefinedTable:
            return False
        if row is None or not str(row[0]).isdigit():
            return False  # the locked path names a version that is not a number
        version = int(row[0])
        self.tables.check_version(version, where)
        return version == self.tables.version

    def _libpq_timeout(self) -> int:
        return max(2, math.ceil(self._connect_timeout))  # libpq takes whole seconds, at least 2

    def _unavailable(self, error: BaseException) -> StoreUnavailableError:
        where = redact_url(self.url) if self.url is not None else 'the caller-owned pool'
        reason = ' '.join(str(error).split()) or type(error).__name__
        return StoreUnavailableError(
            f'Postgres at {where} is unavailable ({reason}); no answer within {self._connect_timeout}s or the '
            'connection was refused or dropped. Check that the server is running and reachable and that the '
            "URL's host, port, database and credentials are right; the operation is safe to retry."
        )
