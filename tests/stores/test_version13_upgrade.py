"""Schema version 12 to 13 (SQLite): the message log names its runs by number instead of by id.

A version-12 file is what this release writes with its run and log tables given version 12's
layout (`sqlite_log_by_run_id`). The upgrade must read back exactly what was written (bodies of a
run's own, reference ranges followed across runs), leave the index as it is, number runs in start
order, and refuse a log row it cannot number without losing it.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from benchmarks._chat import generate_chat
from benchmarks.histories import write_conversation

from durable_recall import ConversationSearch, SnapshotHistorySource, update_index
from durable_recall.base import StoreConfigurationError
from durable_recall.search import SearchRequest
from durable_recall.stores import SqliteStepStore, StepStore
from durable_recall.stores._migrations import SCHEMA_VERSION

from ..search._stub import context
from ._helpers import registration, sqlite_log_by_run_id

pytestmark = pytest.mark.anyio

CHAT = 'chat'
QUERIES = ('timeout', 'pekosaxe record', 'src/pejota/nebeme kriga')


def sql(path: Path, statement: str, *params: object) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        return conn.execute(statement, params).fetchall()


async def everything(store: StepStore) -> dict[str, Any]:
    """Every run's record, snapshots and log as the store reads them, and what a search answers."""
    runs = await store.list_runs(conversation_id=CHAT)
    read: dict[str, Any] = {'runs': runs}
    for run in runs:
        snapshots = await store.list_snapshots(run.run_id, include_interrupted=True)
        read[run.run_id] = snapshots
        read[f'{run.run_id} log'] = await store.read_messages(run.run_id, range(max(snapshots[-1].seqs) + 1))
    search = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    for query in QUERIES:
        read[query] = await search.search(context(CHAT), SearchRequest(query=query))
    return read


async def written(path: Path) -> dict[str, Any]:
    """A chat of one run per exchange, each inheriting a window (reference ranges), indexed; what it reads."""
    store = SqliteStepStore(path)
    try:
        await write_conversation(store, generate_chat(7, 30, conversation_id=CHAT), window=6)
        assert await update_index(store, CHAT) == []
        return await everything(store)
    finally:
        await store.aclose()


def back_to_version_12(path: Path) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        sqlite_log_by_run_id(conn)
        conn.execute("UPDATE dr_meta SET value = '12' WHERE key = 'schema_version'")


async def test_a_version_12_file_reads_back_the_same_with_runs_numbered(tmp_path: Path) -> None:
    path = tmp_path / 'v12.db'
    before = await written(path)
    index_before = sql(path, 'SELECT run_id, seen, lengths FROM dr_index_runs ORDER BY run_key')
    back_to_version_12(path)
    assert sql(path, "SELECT COUNT(*) FROM dr_message_refs WHERE ref_run_id <> ''")[0][0] > 20
    started = [run_id for (run_id,) in sql(path, 'SELECT run_id FROM dr_runs ORDER BY started_at, run_id')]

    store = SqliteStepStore(path)
    try:
        assert await everything(store) == before
    finally:
        await store.aclose()

    assert sql(path, "SELECT value FROM dr_meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    assert SCHEMA_VERSION == 15
    assert [run_id for (run_id,) in sql(path, 'SELECT run_id FROM dr_runs ORDER BY run_no')] == started
    assert sql(path, 'SELECT MIN(run_no), MAX(run_no) FROM dr_runs') == [(1, len(started))]
    assert [row[1] for row in sql(path, 'PRAGMA table_info(dr_message_refs)')] == [
        'run_no',
        'seq',
        'count',
        'ref_run_no',
        'ref_seq',
    ]
    # Every log row found its run, and the index was not rebuilt (nothing pending, rows as they were).
    assert sql(path, 'SELECT COUNT(*) FROM dr_messages WHERE run_no NOT IN (SELECT run_no FROM dr_runs)') == [(0,)]
    assert sql(path, 'SELECT COUNT(*) FROM dr_pending') == [(0,)]
    assert sql(path, 'SELECT run_id, seen, lengths FROM dr_index_runs ORDER BY run_key') == index_before


async def test_a_log_row_whose_run_row_is_gone_stops_the_upgrade_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / 'v12.db'
    await written(path)
    back_to_version_12(path)
    [(lost,)] = sql(path, 'SELECT run_id FROM dr_runs ORDER BY started_at LIMIT 1 OFFSET 3')
    sql(path, 'DELETE FROM dr_runs WHERE run_id = ?', lost)
    rows = sql(path, 'SELECT COUNT(*) FROM dr_messages WHERE run_id = ?', lost)
    assert rows[0][0] > 0

    store = SqliteStepStore(path)
    try:
        with pytest.raises(StoreConfigurationError) as caught:
            await store.list_runs(conversation_id=CHAT)
    finally:
        await store.aclose()

    message = caught.value.message
    assert 'from schema version 12 to 13' in message and 'no run row' in message and 'v12.db' in message
    assert 'NOT NULL constraint failed' in message
    # Rolled back whole: still version 12, its tables and rows as they were.
    assert sql(path, "SELECT value FROM dr_meta WHERE key = 'schema_version'") == [('12',)]
    assert sql(path, 'SELECT COUNT(*) FROM dr_messages WHERE run_id = ?', lost) == rows
    assert sql(path, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '%_v13'") == [(0,)]


async def test_a_deleted_runs_number_is_never_given_again(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    try:
        await store.register_run(registration('first', conversation_id='gone'))
        await store.register_run(registration('second', conversation_id='gone'))
        assert await store.delete_conversation('gone') == 2
        await store.register_run(registration('third', conversation_id='kept'))
    finally:
        await store.aclose()

    assert sql(path, 'SELECT run_no, run_id FROM dr_runs') == [(3, 'third')]
