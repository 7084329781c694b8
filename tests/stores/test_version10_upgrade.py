"""Schema version 9 to 10: run indexes that cost more than they saved are dropped or narrowed.

A version-9 database is what this release writes with the run table's indexes set back to what
version 9 created. Opened by this release, it must list the same runs in the same order, find a
parent's children through the partial index, and keep no index the migration dropped.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores._migrations import SCHEMA_VERSION

from ._helpers import postgres_without_groups, registration, sqlite_log_by_run_id, sqlite_times_as_text

pytestmark = pytest.mark.anyio

_V9_INDEXES = (
    'DROP INDEX IF EXISTS {by_parent}',
    'DROP INDEX IF EXISTS {by_scope}',
    'CREATE INDEX dr_runs_by_started ON {runs} (started_at, run_id)',
    'CREATE INDEX dr_runs_by_parent ON {runs} (parent_run_id, started_at, run_id)',
    'CREATE INDEX dr_index_runs_by_scope ON {index_runs} (scope_key, started_at, run_id)',
)
"""What version 9 had on the run tables, in place of version 10's narrower indexes."""


def _names(schema: str) -> dict[str, str]:
    return {
        'by_parent': f'{schema}dr_runs_by_parent',
        'by_scope': f'{schema}dr_index_runs_by_scope',
        'runs': f'{schema}dr_runs',
        'index_runs': f'{schema}dr_index_runs',
    }


_RUNS = [('a', None, 'c1'), ('b', 'a', 'c1'), ('c', None, 'c2'), ('d', 'a', 'c2'), ('e', 'c', 'c2')]


async def _write(store: StepStore) -> None:
    for run_id, parent, conversation in _RUNS:
        await store.register_run(registration(run_id, conversation_id=conversation, parent_run_id=parent))


async def _listings(store: StepStore) -> list[list[str]]:
    found = [await store.list_runs(), await store.list_runs(parent_run_id='a')]
    found += [
        await store.list_runs(parent_run_id='c', conversation_id='c2'),
        await store.list_runs(conversation_id='c1'),
    ]
    return [[run.run_id for run in runs] for runs in found]


_EXPECTED = [['a', 'b', 'c', 'd', 'e'], ['b', 'd'], ['e'], ['a', 'b']]


async def test_a_version_9_sqlite_file_loses_the_unused_run_indexes(tmp_path: Path) -> None:
    path = tmp_path / 'v9.db'
    store = SqliteStepStore(path)
    try:
        await _write(store)
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:
        for statement in _V9_INDEXES:
            conn.execute(statement.format(**_names('')))
        sqlite_log_by_run_id(conn)
        sqlite_times_as_text(conn)
        conn.execute("UPDATE dr_meta SET value = '9' WHERE key = 'schema_version'")
    store = SqliteStepStore(path)
    try:
        assert await _listings(store) == _EXPECTED
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall() == [
            (str(SCHEMA_VERSION),)
        ]
        indexes = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'dr_runs'")
        found = dict(indexes.fetchall())
        # (and, from schema version 13, the unique index on the id of a run table numbered by rowid)
        assert sorted(found) == ['dr_runs_by_conversation', 'dr_runs_by_parent', 'sqlite_autoindex_dr_runs_1']
        assert found['dr_runs_by_parent'].endswith('WHERE parent_run_id IS NOT NULL')
        indexes = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'dr_index_runs_by_scope'")
        assert indexes.fetchall() == [('CREATE INDEX dr_index_runs_by_scope ON dr_index_runs (scope_key)',)]
        plan = conn.execute("EXPLAIN QUERY PLAN SELECT * FROM dr_runs WHERE parent_run_id = 'a'").fetchall()
        assert 'dr_runs_by_parent' in plan[0][3]  # the partial index serves the lookup
    assert SCHEMA_VERSION == 15


@pytest.mark.postgres
async def test_a_version_9_postgres_schema_loses_the_unused_run_indexes(
    postgres_url: str, postgres_schema: str
) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        await _write(store)
    finally:
        await store.aclose()
    name = f'"{postgres_schema}"'
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        for statement in _V9_INDEXES:
            await conn.execute(statement.format(**_names(f'{name}.')).encode())
        await postgres_without_groups(conn, postgres_schema)
        await conn.execute(f"UPDATE {name}.dr_meta SET value = '9' WHERE key = 'schema_version'".encode())
    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        assert await _listings(store) == _EXPECTED
    finally:
        await store.aclose()
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT value FROM {name}.dr_meta WHERE key = 'schema_version'".encode())
        assert await cur.fetchall() == [(str(SCHEMA_VERSION),)]
        cur = await conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = 'dr_runs'",
            (postgres_schema,),
        )
        found = dict(await cur.fetchall())
        assert sorted(found) == ['dr_runs_by_conversation', 'dr_runs_by_parent', 'dr_runs_pkey']
        assert found['dr_runs_by_parent'].endswith('WHERE (parent_run_id IS NOT NULL)')
        cur = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'dr_index_runs_by_scope'",
            (postgres_schema,),
        )
        [(definition,)] = await cur.fetchall()
        assert definition.endswith('USING btree (scope_key)')
