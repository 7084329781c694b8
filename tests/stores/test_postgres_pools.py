"""Postgres connection pools: a caller's pool used and left open, opened after the first connection, any loop."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from durable_recall.base import _errors
from durable_recall.stores import PostgresStepStore

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


async def test_a_caller_owned_pool_is_used_and_left_open(postgres_url: str, postgres_schema: str) -> None:
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    # Not autocommit, and rows as dicts: the store must cope with the caller's settings.
    pool = AsyncConnectionPool(postgres_url, min_size=1, max_size=2, open=False, kwargs={'row_factory': dict_row})
    await pool.open(wait=True, timeout=5)
    try:
        store = PostgresStepStore(pool=pool, schema=postgres_schema)
        record = await store.register_run(registration('run-1'))
        await save_history(store, 'run-1', [messages(0), messages(0, 1)])
        assert await store.get_run('run-1') == record
        assert [s.messages for s in await store.list_snapshots('run-1')] == [messages(0), messages(0, 1)]
        await store.aclose()

        assert not pool.closed
        assert await store.get_run('run-1') == record
        async with pool.connection() as conn:
            cur = await conn.execute(f'SELECT COUNT(*) AS n FROM "{postgres_schema}".dr_messages'.encode())
            assert await cur.fetchone() == {'n': 2}
    finally:
        await pool.close()


async def test_the_pool_takes_the_connection_that_checked_the_schema(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One connect and one fresh server backend for a process's first use, not two in turn.
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    from durable_recall.stores.postgres._connect import PostgresConnector

    events: list[str] = []
    real_connect = psycopg.AsyncConnection.__dict__['connect'].__func__
    real_open, real_migrate = AsyncConnectionPool.open, PostgresConnector._migrate

    async def connect(cls: type[psycopg.AsyncConnection[Any]], *args: Any, **kwargs: Any) -> Any:
        events.append('connects')
        return await real_connect(cls, *args, **kwargs)

    async def pool_open(self: AsyncConnectionPool[Any], *args: Any, **kwargs: Any) -> None:
        events.append('pool opens')
        await real_open(self, *args, **kwargs)

    async def migrate(self: PostgresConnector, conn: Any) -> None:
        events.append('schema checked')
        await real_migrate(self, conn)

    monkeypatch.setattr(psycopg.AsyncConnection, 'connect', classmethod(connect))
    monkeypatch.setattr(AsyncConnectionPool, 'open', pool_open)
    monkeypatch.setattr(PostgresConnector, '_migrate', migrate)
    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await store.register_run(registration('run-1'))
    assert [run.run_id for run in await store.list_runs()] == ['run-1']
    await store.aclose()

    assert events == ['connects', 'schema checked', 'pool opens']


async def test_a_refused_first_connection_opens_no_pool(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The pool connects only once the server has taken the direct connection: a pool pointed at a
    # database that does not exist would retry in the background and log each refusal, beside the
    # one error the caller gets.
    from psycopg_pool import AsyncConnectionPool

    opened: list[str] = []
    real_open = AsyncConnectionPool.open

    async def pool_open(self: AsyncConnectionPool[Any], *args: Any, **kwargs: Any) -> None:
        opened.append('pool opens')
        await real_open(self, *args, **kwargs)

    monkeypatch.setattr(AsyncConnectionPool, 'open', pool_open)
    missing = postgres_url.rpartition('/')[0] + '/durable_recall_no_such_db'
    store = PostgresStepStore(missing)
    with pytest.raises(_errors.StoreUnavailableError, match='durable_recall_no_such_db'):
        await store.list_runs()
    await store.aclose()

    assert opened == []


def test_a_store_outlives_its_first_event_loop(postgres_url: str, postgres_schema: str) -> None:
    store = PostgresStepStore(postgres_url, schema=postgres_schema)

    async def register() -> None:
        await store.register_run(registration('run-1'))

    async def read() -> list[str]:
        try:
            return [r.run_id for r in await store.list_runs()]
        finally:
            await store.aclose()

    anyio.run(register)  # leaves its pool behind on a loop that then closes
    assert anyio.run(read) == ['run-1']
