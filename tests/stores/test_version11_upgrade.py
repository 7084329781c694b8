"""Schema version 10 to 11: open tails of postings hold varint records, so the index is rebuilt;
SQLite stores run and snapshot times as integer microseconds.

A version-10 database is what this release writes with each open tail re-packed as version 10
packed it (three little-endian 32-bit ints a posting). Read as varints those bytes decode into
other postings without an error (a record of small values is twelve one-byte varints: three
"postings"), so the migration must empty the index and let the next catch-up rebuild it.
"""

from __future__ import annotations

import sqlite3
import struct
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall import update_index
from durable_recall.base import CorruptRunError
from durable_recall.index import OPEN, decode_chunk
from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores._migrations import SCHEMA_VERSION

from ._helpers import (
    messages,
    postgres_without_groups,
    registration,
    save_history,
    sqlite_log_by_run_id,
    sqlite_times_as_text,
)

pytestmark = pytest.mark.anyio

_TERMS = ['question', 'answer', '4', '5']


def _version_10_tail(data: bytes) -> bytes:
    """An open tail as version 10 packed it."""
    return b''.join(
        struct.pack('<III', key >> 32, key & 0xFFFFFFFF, tf | length << 16)
        for key, tf, length in decode_chunk(OPEN, data).entries()
    )


async def _write(store: StepStore) -> dict[str, list[tuple[int, int, int]]]:
    for run in ('run-1', 'run-2'):
        await store.register_run(registration(run))
    await save_history(store, 'run-1', [messages(0, 1), messages(0, 1, 2, 3)])
    await save_history(store, 'run-2', [messages(0, 1, 2, 3, 4, 5)])
    assert await update_index(store, 'conv') == []
    return await _postings(store)


async def _postings(store: StepStore) -> dict[str, list[tuple[int, int, int]]]:
    """Each term's `(run, position, tf)`, by run id (run keys are renumbered by a rebuild)."""
    index = store.index_storage()
    rows = await index.postings(_TERMS, 'conv', all_scopes=False)
    runs = await index.load_runs(['run-1', 'run-2'])
    ids = {row.run_key: run_id for run_id, row in runs.items()}
    found: dict[str, list[tuple[int, int, int]]] = {}
    for term, chunks in rows.items():
        entries = [entry for row in chunks for entry in decode_chunk(row.chunk, row.postings).entries()]
        found[term] = sorted((int(ids[key >> 32][-1]), key & 0xFFFFFFFF, tf) for key, tf, _ in entries)
    return found


async def test_a_version_10_sqlite_index_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / 'v10.db'
    store = SqliteStepStore(path)
    try:
        expected = await _write(store)
    finally:
        await store.aclose()
    assert sorted(expected) == sorted(_TERMS)
    with closing(sqlite3.connect(path)) as conn, conn:
        tails = conn.execute('SELECT scope_key, term, postings FROM dr_index_postings WHERE chunk = 0').fetchall()
        assert tails
        for scope_key, term, data in tails:
            conn.execute(
                'UPDATE dr_index_postings SET postings = ? WHERE scope_key = ? AND term = ? AND chunk = 0',
                (_version_10_tail(data), scope_key, term),
            )
        sqlite_log_by_run_id(conn)
        sqlite_times_as_text(conn)
        conn.execute("UPDATE dr_meta SET value = '10' WHERE key = 'schema_version'")
    store = SqliteStepStore(path)
    try:
        assert await update_index(store, 'conv') == []
        assert await _postings(store) == expected
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn:
        version = conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall()
    assert version == [(str(SCHEMA_VERSION),)]
    assert SCHEMA_VERSION == 15


@pytest.mark.postgres
async def test_a_version_10_postgres_index_is_rebuilt(postgres_url: str, postgres_schema: str) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        expected = await _write(store)
    finally:
        await store.aclose()
    name = f'"{postgres_schema}"'
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await postgres_without_groups(conn, postgres_schema)
        cur = await conn.execute(
            f'SELECT scope_key, term, postings FROM {name}.dr_index_postings WHERE chunk = 0'.encode()
        )
        tails = await cur.fetchall()
        assert tails
        for scope_key, term, data in tails:
            await conn.execute(
                f'UPDATE {name}.dr_index_postings SET postings = %s WHERE scope_key = %s AND term = %s'
                ' AND chunk = 0'.encode(),
                (_version_10_tail(bytes(data)), scope_key, term),
            )
        await conn.execute(f"UPDATE {name}.dr_meta SET value = '10' WHERE key = 'schema_version'".encode())
    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        assert await update_index(store, 'conv') == []
        assert await _postings(store) == expected
    finally:
        await store.aclose()
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT value FROM {name}.dr_meta WHERE key = 'schema_version'".encode())
        assert await cur.fetchall() == [(str(SCHEMA_VERSION),)]


async def test_sqlite_times_become_exact_microseconds_and_damaged_ones_stay_named(tmp_path: Path) -> None:
    path = tmp_path / 'v10.db'
    store = SqliteStepStore(path)
    try:
        await _write(store)
        await store.register_run(registration('run-3'))
        await store.register_run(registration('run-4'))
        records = await store.get_runs(['run-1', 'run-2'])
        saved = [snapshot.saved_at for snapshot in await store.list_snapshots('run-1')]
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:
        sqlite_log_by_run_id(conn)
        sqlite_times_as_text(conn)
        # Damage a schema-10 file could hold: text that is no timestamp, and a number in the text column.
        conn.execute("UPDATE dr_runs SET started_at = 'yesterday' WHERE run_id = 'run-3'")
        conn.execute("UPDATE dr_runs SET started_at = 42 WHERE run_id = 'run-4'")
        conn.execute("UPDATE dr_meta SET value = '10' WHERE key = 'schema_version'")
    store = SqliteStepStore(path)
    try:
        assert await store.get_runs(['run-1', 'run-2']) == records
        assert [snapshot.saved_at for snapshot in await store.list_snapshots('run-1')] == saved
        with pytest.raises(CorruptRunError, match="started_at is not a timestamp.*'yesterday'"):
            await store.get_run('run-3')
        with pytest.raises(CorruptRunError, match='started_at is not a timestamp.*a number: 42'):
            await store.get_run('run-4')
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn:
        kinds = conn.execute('SELECT run_id, typeof(started_at) FROM dr_runs ORDER BY run_id').fetchall()
        snapshot_kinds = conn.execute('SELECT DISTINCT typeof(saved_at) FROM dr_snapshots').fetchall()
    assert kinds == [('run-1', 'integer'), ('run-2', 'integer'), ('run-3', 'text'), ('run-4', 'text')]
    assert snapshot_kinds == [('integer',)]
