"""The Postgres schema: made when missing, checked in one read, refused from a newer release, its tables."""

from __future__ import annotations

from typing import Any

import pytest

from durable_recall.base import _errors
from durable_recall.stores import PostgresStepStore
from durable_recall.stores._migrations import SCHEMA_VERSION

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


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
