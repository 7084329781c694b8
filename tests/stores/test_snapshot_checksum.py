"""Snapshot rows carry a checksum (schema version 14): a row changed to another valid one is named as damage."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall.errors import CorruptSnapshotError
from durable_recall.stores import SqliteStepStore
from durable_recall.stores._migrations import SCHEMA_VERSION
from durable_recall.stores._snapshot_sum import snapshot_checksum
from tests._services.stores import StoreKit

from ._helpers import delta, messages, registration

pytestmark = pytest.mark.anyio


async def two_range_snapshot(kit: StoreKit) -> None:
    """Run `r`: snapshot 1 is two ranges of its log, `[[0,2],[3,4]]` (three messages)."""
    store = kit.store
    await store.register_run(registration('r', conversation_id='c'))
    assert await store.save_snapshot(delta('r', 0, [], messages(0, 1, 2)))
    assert await store.save_snapshot(delta('r', 1, messages(0, 1, 2), messages(0, 1, 3)))
    [[ranges]] = await kit.query('SELECT ranges FROM {snapshots} WHERE run_id = ? AND idx = 1', 'r')
    assert ranges == '[[0,2],[3,4]]'


def test_the_schema_version_is_pinned() -> None:
    assert SCHEMA_VERSION == 15


def test_the_checksum_is_pinned() -> None:
    # Stored data: Python and Postgres's md5() compute the same text, and a change breaks every store.
    assert snapshot_checksum('r', 1, 'complete', '[[0,2],[3,4]]', 3) == '7277dd1ac243cdc8'


async def test_a_reordered_range_list_of_the_same_size_is_named_by_every_read(sql_kit: StoreKit) -> None:
    await two_range_snapshot(sql_kit)
    store = sql_kit.store
    [[stored]] = await sql_kit.query('SELECT checksum FROM {snapshots} WHERE run_id = ? AND idx = 1', 'r')
    assert stored == snapshot_checksum('r', 1, 'complete', '[[0,2],[3,4]]', 3)
    # Another valid order of the same size: without the checksum it reads as a different history.
    await sql_kit.query("UPDATE {snapshots} SET ranges = '[[3,4],[0,2]]' WHERE run_id = ? AND idx = 1", 'r')

    for read in (store.list_snapshots('r'), store.latest_snapshot('r')):
        with pytest.raises(CorruptSnapshotError, match='does not match its checksum') as caught:
            await read
        assert (caught.value.run_id, caught.value.index) == ('r', 1)


@pytest.mark.parametrize(
    'change', ["state = 'interrupted'", "size = 3, ranges = '[[0,3]]'", 'checksum = NULL', "checksum = 'x'"]
)
async def test_any_changed_row_is_named(change: str, sql_kit: StoreKit) -> None:
    await two_range_snapshot(sql_kit)
    await sql_kit.query(f'UPDATE {{snapshots}} SET {change} WHERE run_id = ? AND idx = 1', 'r')
    with pytest.raises(CorruptSnapshotError, match='does not match its checksum'):
        await sql_kit.store.list_snapshots('r', include_interrupted=True)


def v13(path: Path) -> None:
    """Set a file back to schema version 13: its snapshot rows without checksums."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            'CREATE TABLE dr_snapshots_v13 (run_id TEXT NOT NULL, idx INTEGER NOT NULL, step_index INTEGER NOT NULL,'
            ' state TEXT NOT NULL, saved_at INTEGER NOT NULL, ranges TEXT NOT NULL, size INTEGER NOT NULL,'
            ' PRIMARY KEY (run_id, idx)) WITHOUT ROWID'
        )
        conn.execute(
            'INSERT INTO dr_snapshots_v13'
            ' SELECT run_id, idx, step_index, state, saved_at, ranges, size FROM dr_snapshots'
        )
        conn.execute('DROP TABLE dr_snapshots')
        conn.execute('ALTER TABLE dr_snapshots_v13 RENAME TO dr_snapshots')
        conn.execute("UPDATE dr_meta SET value = '13' WHERE key = 'schema_version'")


async def test_a_version_13_sqlite_file_upgrades_in_place_its_snapshots_getting_checksums(tmp_path: Path) -> None:
    path = tmp_path / 'v13.db'
    store = SqliteStepStore(path)
    await store.register_run(registration('r', conversation_id='c'))
    history = [messages(0, 1, 2), messages(0, 1, 3)]
    assert await store.save_snapshot(delta('r', 0, [], history[0]))
    assert await store.save_snapshot(delta('r', 1, history[0], history[1]))
    await store.aclose()
    v13(path)

    store = SqliteStepStore(path)
    try:
        assert [s.messages for s in await store.list_snapshots('r')] == history
        with closing(sqlite3.connect(path)) as conn:
            rows = conn.execute('SELECT run_id, idx, state, ranges, size, checksum FROM dr_snapshots').fetchall()
            version = conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchone()
        assert version == (str(SCHEMA_VERSION),)
        assert [row[5] for row in rows] == [snapshot_checksum(*row[:5]) for row in rows]
    finally:
        await store.aclose()


@pytest.mark.postgres
async def test_a_version_13_postgres_schema_upgrades_in_place(postgres_url: str, postgres_schema: str) -> None:
    import psycopg

    from durable_recall.stores import PostgresStepStore

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await store.register_run(registration('r', conversation_id='c'))
    history = [messages(0, 1, 2), messages(0, 1, 3)]
    assert await store.save_snapshot(delta('r', 0, [], history[0]))
    assert await store.save_snapshot(delta('r', 1, history[0], history[1]))
    await store.aclose()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'ALTER TABLE "{postgres_schema}".dr_snapshots DROP COLUMN checksum'.encode())
        conn.execute(f"UPDATE \"{postgres_schema}\".dr_meta SET value = '13' WHERE key = 'schema_version'".encode())

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        assert [s.messages for s in await store.list_snapshots('r')] == history
    finally:
        await store.aclose()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        query = f'SELECT run_id, idx, state, ranges, size, checksum FROM "{postgres_schema}".dr_snapshots ORDER BY idx'
        rows = conn.execute(query.encode()).fetchall()
        meta = f'SELECT value FROM "{postgres_schema}".dr_meta WHERE key = \'schema_version\''
        version = conn.execute(meta.encode()).fetchone()
    assert version == (str(SCHEMA_VERSION),)
    assert [row[5] for row in rows] == [snapshot_checksum(*row[:5]) for row in rows]
