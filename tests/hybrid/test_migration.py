"""Schema version 9: a version 8 database gains `dr_vectors`, keeps its index, and hybrid backfills it."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores._migrations import SCHEMA_VERSION
from tests.stores._helpers import postgres_without_groups, sqlite_log_by_run_id, sqlite_times_as_text

from ..search._stub import context, request
from ._kit import EXCHANGES, ConceptEmbeddingModel, bm25, chat, hybrid, needs_numpy

pytestmark = [pytest.mark.anyio, needs_numpy]


async def _upgraded_search(store: StepStore) -> tuple[str, ConceptEmbeddingModel]:
    model = ConceptEmbeddingModel()
    answer = await hybrid(store, model, context_lines=0).search(context(), request('car'))
    return answer, model


async def test_a_version_8_sqlite_database_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / 'v8.db'
    store = SqliteStepStore(path)
    await chat(store, EXCHANGES)
    await bm25(store).search(context(), request('report'))
    await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:  # what version 8 wrote
        conn.execute('DROP TABLE dr_vectors')
        sqlite_log_by_run_id(conn)
        sqlite_times_as_text(conn)
        conn.execute("UPDATE dr_meta SET value = '8' WHERE key = 'schema_version'")
    store = SqliteStepStore(path)
    try:
        answer, model = await _upgraded_search(store)
    finally:
        await store.aclose()
    assert 'red automobile' in answer.split('\n\n---\n\n')[0]
    assert len(model.documents) == 2 * len(EXCHANGES)  # backfilled
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall() == [
            (str(SCHEMA_VERSION),)
        ]
        assert conn.execute('SELECT COUNT(*) FROM dr_pending').fetchall() == [(0,)]  # the index was not rebuilt
        assert conn.execute('SELECT COUNT(*), SUM(dim) FROM dr_vectors').fetchall() == [(6, 36)]


@pytest.mark.postgres
async def test_a_version_8_postgres_database_is_upgraded(postgres_url: str, postgres_schema: str) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        await chat(store, EXCHANGES)
        await bm25(store).search(context(), request('report'))
    finally:
        await store.aclose()
    name = f'"{postgres_schema}"'
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute(f'DROP TABLE {name}.dr_vectors'.encode())
        await postgres_without_groups(conn, postgres_schema)
        await conn.execute(f"UPDATE {name}.dr_meta SET value = '8' WHERE key = 'schema_version'".encode())
    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        answer, model = await _upgraded_search(store)
    finally:
        await store.aclose()
    assert 'red automobile' in answer.split('\n\n---\n\n')[0]
    assert len(model.documents) == 2 * len(EXCHANGES)
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT value FROM {name}.dr_meta WHERE key = 'schema_version'".encode())
        assert await cur.fetchall() == [(str(SCHEMA_VERSION),)]
        cur = await conn.execute(f'SELECT COUNT(*) FROM {name}.dr_pending'.encode())
        assert await cur.fetchall() == [(0,)]
        cur = await conn.execute(f'SELECT COUNT(*), SUM(dim) FROM {name}.dr_vectors'.encode())
        assert await cur.fetchall() == [(6, 36)]
