"""Schema version 1, from before the index: the store is upgraded and its runs with snapshots are marked pending."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from durable_recall.base._codec import dump_messages
from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores._migrations import (
    POSTGRES_META,
    POSTGRES_MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_META,
    SQLITE_MIGRATIONS,
)

from ._helpers import messages
from ._index_commits import change, pending

pytestmark = pytest.mark.anyio


def v1_rows() -> list[tuple[str, tuple[Any, ...]]]:
    """Rows a version-1 store held: two runs with snapshots (one without a conversation), one without."""
    bodies = dump_messages(messages(0, 1, 2))
    at = '2025-01-01T00:00:0{}.000000+00:00'
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('with-snapshots', 'c', '{}', at.format(1), 't')),
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('no-conversation', None, '{}', at.format(2), 't')),
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('no-snapshots', 'c', '{}', at.format(3), 't')),
    ]
    for run_id, sizes in [('with-snapshots', (2, 3)), ('no-conversation', (1,))]:
        for seq, body in enumerate(bodies[: max(sizes)]):
            rows.append(('INSERT INTO {messages} VALUES (?, ?, ?)', (run_id, seq, body)))
        for index, size in enumerate(sizes):
            rows.append(
                (
                    'INSERT INTO {snapshots} VALUES (?, ?, ?, ?, ?, ?, ?)',
                    (run_id, index, index, 'complete', at.format(4), f'[[0,{size}]]', size),
                )
            )
    return rows


async def check_upgraded(store: StepStore) -> None:
    index = store.index_storage()
    assert await pending(index, 'c') == ['with-snapshots']
    assert await pending(index, None) == ['no-conversation']
    assert await pending(index, all_scopes=True) == ['with-snapshots', 'no-conversation']
    assert (await index.status(None, all_scopes=True)).generation != ''
    latest = await store.latest_snapshot('with-snapshots')
    assert latest is not None and latest.messages == messages(0, 1, 2) and latest.seqs == [0, 1, 2]
    # The backfilled mark holds the last snapshot index: a catch-up that read it clears the mark.
    await index.commit(await change(store, 'with-snapshots', seen=1, upto=0))
    assert await pending(index, 'c') == ['with-snapshots']
    await index.commit(await change(store, 'with-snapshots', expected_seen=1, seen=1, upto=1))
    assert await pending(index, 'c') == []


class TestMigration:
    async def test_a_version_1_sqlite_file_is_upgraded_and_backfilled(self, tmp_path: Path) -> None:
        path = tmp_path / 'v1.db'
        names = {name: f'dr_{name}' for name in ('meta', 'runs', 'messages', 'snapshots')}
        with closing(sqlite3.connect(path, isolation_level=None)) as conn:
            conn.execute(SQLITE_META)
            for statement in SQLITE_MIGRATIONS[0]:
                conn.execute(statement)
            conn.execute("INSERT INTO dr_meta VALUES ('schema_version', '1')")
            for statement, params in v1_rows():
                conn.execute(statement.format(**names), params)

        store = SqliteStepStore(path)
        try:
            await check_upgraded(store)
        finally:
            await store.aclose()
        with closing(sqlite3.connect(path)) as conn:
            found = conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall()
            assert found == [(str(SCHEMA_VERSION),)]

    async def test_a_version_1_postgres_schema_is_upgraded_and_backfilled(
        self, postgres_url: str, postgres_schema: str
    ) -> None:
        import psycopg

        names = {name: f'"{postgres_schema}".dr_{name}' for name in ('meta', 'runs', 'messages', 'snapshots')}
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            for statement in (POSTGRES_META, *POSTGRES_MIGRATIONS[0]):
                await conn.execute(statement.format(**names).encode())
            await conn.execute(f"INSERT INTO {names['meta']} VALUES ('schema_version', '1')".encode())
            for statement, params in v1_rows():
                await conn.execute(statement.format(**names).replace('?', '%s').encode(), params)

        store = PostgresStepStore(postgres_url, schema=postgres_schema)
        try:
            await check_upgraded(store)
        finally:
            await store.aclose()
