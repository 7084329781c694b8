"""Postgres specifics: configuration errors, an unreachable server, pools, and concurrent writers."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from durable_recall.base import _errors
from durable_recall.base._codec import dump_messages
from durable_recall.base._records import SnapshotDelta
from durable_recall.stores import PostgresStepStore, redact_url
from durable_recall.stores._migrations import SCHEMA_VERSION

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen(8)
        yield server.getsockname()[1]


@pytest.mark.parametrize(
    'url',
    [
        'postgresql://[::1/test',
        'postgresql://host:99999/test',
        'postgresql://host:port/test',
        'postgres://host/test?no_such_option=1',
        'mysql://host/test',
        'host=localhost dbname=test',
    ],
)
def test_a_malformed_url_fails_at_construction(url: str) -> None:
    with pytest.raises(_errors.StoreConfigurationError, match='not a usable Postgres URL'):
        PostgresStepStore(url)


def test_the_url_error_does_not_show_the_password() -> None:
    with pytest.raises(_errors.StoreConfigurationError) as caught:
        PostgresStepStore('postgresql://user:hunter2@host:99999/test')

    assert 'hunter2' not in caught.value.message
    assert 'user:***@host' in caught.value.message


def test_exactly_one_of_url_and_pool() -> None:
    with pytest.raises(_errors.StoreConfigurationError, match='either a `url` or a caller-owned `pool`'):
        PostgresStepStore()


def test_an_empty_schema_name_is_refused() -> None:
    with pytest.raises(_errors.StoreConfigurationError, match='schema'):
        PostgresStepStore('postgresql://host/test', schema='')


@pytest.mark.parametrize(
    ('url', 'redacted'),
    [
        ('postgresql://u:secret@h:5432/db', 'postgresql://u:***@h:5432/db'),
        ('postgresql://u@h/db', 'postgresql://u@h/db'),
        ('postgresql://h/db?password=secret&sslmode=require', 'postgresql://h/db?password=***&sslmode=require'),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


async def test_a_refused_connection_raises_unavailable_quickly() -> None:
    port = closed_port()
    store = PostgresStepStore(f'postgresql://user:secret@127.0.0.1:{port}/test', connect_timeout=2)
    started = time.monotonic()

    for call in (store.get_run('run-1'), store.register_run(registration('run-1'))):
        with pytest.raises(_errors.StoreUnavailableError) as caught:
            await call
        message = str(caught.value)
        assert f'127.0.0.1:{port}' in message
        assert 'secret' not in message
        assert 'user:***@' in message
        assert 'Check that the server is running' in message

    assert time.monotonic() - started < 2
    await store.aclose()


async def test_a_silent_server_times_out_instead_of_hanging(silent_server: int) -> None:
    store = PostgresStepStore(f'postgresql://postgres@127.0.0.1:{silent_server}/test', connect_timeout=0.5)
    started = time.monotonic()

    with pytest.raises(_errors.StoreUnavailableError, match='no answer within 0.5s'):
        await store.list_conversations()

    assert time.monotonic() - started < 3


async def test_the_store_creates_a_missing_schema(postgres_url: str, postgres_schema: str) -> None:
    import psycopg

    schema = f'{postgres_schema}_made'
    store = PostgresStepStore(postgres_url, schema=schema)
    try:
        await store.register_run(registration('run-1'))
        assert [r.run_id for r in await store.list_runs()] == ['run-1']
    finally:
        await store.aclose()
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())


async def test_concurrent_first_use_migrates_once(postgres_url: str, postgres_schema: str) -> None:
    stores = [PostgresStepStore(postgres_url, schema=postgres_schema) for _ in range(4)]
    results: list[object] = []

    async def first_use(store: PostgresStepStore, n: int) -> None:
        results.append(await store.register_run(registration(f'run-{n}')))

    async with anyio.create_task_group() as group:
        for n, store in enumerate(stores):
            group.start_soon(first_use, store, n)

    assert len(results) == 4
    assert len(await stores[0].list_runs()) == 4
    for store in stores:
        await store.aclose()


async def test_concurrent_saves_of_one_delta_append_once(postgres_url: str, postgres_schema: str) -> None:
    writers = [PostgresStepStore(postgres_url, schema=postgres_schema) for _ in range(3)]
    await writers[0].register_run(registration('run-1'))
    outcomes: list[bool] = []
    for index in range(8):
        bodies = dump_messages(messages(index * 2, index * 2 + 1))
        segments = [(0, index * 2), (-1, 2)] if index else [(-1, 2)]
        delta = SnapshotDelta(
            run_id='run-1', index=index, step_index=index, state='complete', segments=segments, messages=bodies
        )

        async def save(store: PostgresStepStore, delta: SnapshotDelta = delta) -> None:
            outcomes.append(await store.save_snapshot(delta))

        async with anyio.create_task_group() as group:
            for store in writers:
                group.start_soon(save, store)
        assert sorted(outcomes[-3:]) == [False, False, True]

    latest = await writers[1].latest_snapshot('run-1')
    assert latest is not None
    assert latest.messages == messages(*range(16))
    for store in writers:
        await store.aclose()


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


@pytest.mark.parametrize(('version', 'error'), [('99', 'schema version 99'), ('x', "version 'x'")])
async def test_a_schema_from_a_newer_release_is_refused(
    postgres_url: str, postgres_schema: str, version: str, error: str
) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await store.register_run(registration('run-1'))
    await store.aclose()
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(
            f'UPDATE "{postgres_schema}".dr_meta SET value = %s WHERE key = \'schema_version\''.encode(), (version,)
        )

    newer = PostgresStepStore(postgres_url, schema=postgres_schema)
    with pytest.raises(_errors.StoreConfigurationError, match=error):
        await newer.list_runs()
    await newer.aclose()


async def test_a_current_schema_is_checked_in_one_read_without_the_lock(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await store.register_run(registration('run-1'))
    await store.aclose()
    statements: list[str] = []
    real: Any = psycopg.AsyncCursor.execute

    async def execute(self: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(query if isinstance(query, str) else query.as_string(self.connection))
        return await real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncCursor, 'execute', execute)
    again = PostgresStepStore(postgres_url, schema=postgres_schema)
    runs = await again.list_runs()
    await again.aclose()

    assert [run.run_id for run in runs] == ['run-1']
    assert not [statement for statement in statements if 'advisory' in statement or 'CREATE' in statement]
    assert len([statement for statement in statements if 'schema_version' in statement]) == 1


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


async def test_tables_on_the_search_path_of_a_fresh_database(postgres_database_url: str) -> None:
    import psycopg

    store = PostgresStepStore(postgres_database_url)
    await store.register_run(registration('run-1', conversation_id='c'))
    await save_history(store, 'run-1', [messages(0), messages(0, 1)])
    assert [s.messages for s in await store.list_snapshots('run-1')] == [messages(0), messages(0, 1)]
    assert await store.delete_conversation('c') == 1
    await store.aclose()

    async with await psycopg.AsyncConnection.connect(postgres_database_url) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name"
        )
        assert await cur.fetchall() == [
            ('dr_conversation_keys',),
            ('dr_index_groups',),
            ('dr_index_hashes',),
            ('dr_index_postings',),
            ('dr_index_runs',),
            ('dr_index_scopes',),
            ('dr_message_refs',),
            ('dr_messages',),
            ('dr_meta',),
            ('dr_pending',),
            ('dr_runs',),
            ('dr_snapshots',),
            ('dr_vectors',),
        ]
        cur = await conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'")
        assert await cur.fetchall() == [(str(SCHEMA_VERSION),)]
        assert SCHEMA_VERSION == 15

        async def columns(table: str) -> list[tuple[str, str, str]]:
            cur = await conn.execute(
                'SELECT column_name, data_type, is_nullable FROM information_schema.columns'
                " WHERE table_schema = 'public' AND table_name = %s ORDER BY ordinal_position",
                (table,),
            )
            return await cur.fetchall()

        # A body is JSON text or compressed bytes; inherited entries are ranges of references.
        assert await columns('dr_messages') == [
            ('run_id', 'text', 'NO'),
            ('seq', 'integer', 'NO'),
            ('body', 'text', 'YES'),
            ('data', 'bytea', 'YES'),
        ]
        assert await columns('dr_message_refs') == [
            ('run_id', 'text', 'NO'),
            ('seq', 'integer', 'NO'),
            ('count', 'integer', 'NO'),
            ('ref_run_id', 'text', 'NO'),
            ('ref_seq', 'integer', 'NO'),
        ]
        assert ('state', 'bytea', 'NO') in await columns('dr_index_runs')
        assert await columns('dr_vectors') == [
            ('run_id', 'text', 'NO'),
            ('model', 'text', 'NO'),
            ('seen', 'bigint', 'NO'),
            ('dim', 'integer', 'NO'),
            ('hashes', 'bytea', 'NO'),
            ('vectors', 'bytea', 'NO'),
        ]


async def test_a_small_read_of_logs_is_decoded_without_a_worker_thread(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio.to_thread

    from durable_recall.stores.postgres import _store

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0, 1, 2)])
    handed: list[object] = []
    real = anyio.to_thread.run_sync

    async def counting(function: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(function)
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, 'run_sync', counting)
    small = await store.read_logs({'run-1': [0, 2]})
    inline = len(handed)
    monkeypatch.setattr(_store, '_INLINE_DECODE', 1)  # every read is now big
    big = await store.read_logs({'run-1': [0, 2]})
    await store.aclose()

    assert small == big == {'run-1': {0: messages(0)[0], 2: messages(2)[0]}}
    assert inline == 0
    assert len(handed) == 1
