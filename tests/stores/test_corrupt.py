"""A row that does not decode is reported with its run and index, never skipped (SQL stores)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall import SqliteStepStore
from durable_recall.base import _errors
from durable_recall.base._records import SnapshotDelta
from tests._services.stores import StoreKit

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio

# Snapshot 1 of run-1 is messages 0..3: log entries 0..3, one range.
TAMPERING = {
    'ranges-not-json': ("UPDATE {snapshots} SET ranges = '[[0,' WHERE run_id = ? AND idx = 1", 'not JSON'),
    'ranges-not-a-list': ("UPDATE {snapshots} SET ranges = '{{}}' WHERE run_id = ? AND idx = 1", 'not a JSON list'),
    'range-reversed': ("UPDATE {snapshots} SET ranges = '[[3,1]]' WHERE run_id = ? AND idx = 1", 'is not a [first'),
    'range-not-ints': ("UPDATE {snapshots} SET ranges = '[[0,true]]' WHERE run_id = ? AND idx = 1", 'is not a [first'),
    'size-mismatch': ('UPDATE {snapshots} SET size = 7 WHERE run_id = ? AND idx = 1', 'records 7'),
    'unknown-state': ("UPDATE {snapshots} SET state = 'paused' WHERE run_id = ? AND idx = 1", "unknown state 'paused'"),
    'missing-log-entry': ('DELETE FROM {messages} WHERE {of_run} AND seq = 3', 'message 3 of the run log is missing'),
    'body-not-a-message': (
        'UPDATE {messages} SET body = \'{{"kind":"nope"}}\' WHERE {of_run} AND seq = 3',
        'kind',
    ),
    'body-not-json': ("UPDATE {messages} SET body = 'garbage' WHERE {of_run} AND seq = 3", 'JSON'),
    'body-of-two-messages': (
        'UPDATE {messages} SET body = \'{{"parts":[],"kind":"request"}},{{"parts":[],"kind":"request"}}\''
        ' WHERE {of_run} AND seq = 3',
        'one is not a message',
    ),
}

# What only SQLite's dynamic typing lets a damaged file hold (Postgres refuses it on write).
SQLITE_TAMPERING = {
    'body-not-utf8': (
        "UPDATE dr_messages SET body = CAST(X'7B22FF22' AS TEXT)"
        ' WHERE run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?) AND seq = 3',
        'not UTF-8 text',
    ),
    'body-an-integer': (
        'UPDATE dr_messages SET body = 42 WHERE run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?) AND seq = 3',
        'stored body is a int',
    ),
    'saved-at-a-blob': ("UPDATE dr_snapshots SET saved_at = X'00' WHERE run_id = ? AND idx = 1", 'saved_at is a bytes'),
    'ranges-an-integer': ('UPDATE dr_snapshots SET ranges = 5 WHERE run_id = ? AND idx = 1', 'not a JSON list'),
}


@pytest.mark.parametrize('case', list(TAMPERING))
async def test_a_tampered_row_raises_naming_run_and_index(sql_kit: StoreKit, case: str) -> None:
    store = sql_kit.store
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0, 1), messages(0, 1, 2, 3)])
    sql, reason = TAMPERING[case]
    await sql_kit.query(sql, 'run-1')

    for read in (
        store.list_snapshots('run-1'),
        store.list_snapshots('run-1', include_interrupted=True),
        store.latest_snapshot('run-1'),
    ):
        with pytest.raises(_errors.CorruptSnapshotError) as caught:
            await read
        assert (caught.value.run_id, caught.value.index) == ('run-1', 1)
        assert reason in caught.value.reason
        assert "snapshot 1 of run 'run-1' is corrupt" in str(caught.value)


@pytest.mark.parametrize('case', list(SQLITE_TAMPERING))
async def test_a_mistyped_sqlite_value_raises_naming_the_run(tmp_path: Path, case: str) -> None:
    store = SqliteStepStore(tmp_path / 'store.db')
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0, 1), messages(0, 1, 2, 3)])
    sql, reason = SQLITE_TAMPERING[case]
    with closing(sqlite3.connect(tmp_path / 'store.db')) as conn:
        conn.execute(sql, ('run-1',))
        conn.commit()
    try:
        for read in (store.list_snapshots('run-1'), store.latest_snapshot('run-1')):
            with pytest.raises(_errors.CorruptSnapshotError, match=reason) as caught:
                await read
            assert caught.value.run_id == 'run-1'
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ('sql', 'reason'),
    [
        ("UPDATE dr_runs SET started_at = X'00' WHERE run_id = ?", 'started_at is a bytes'),
        ("UPDATE dr_runs SET metadata = X'FF' WHERE run_id = ?", 'metadata is a bytes'),
        ("UPDATE dr_runs SET agent_name = CAST(X'FF' AS TEXT) WHERE run_id = ?", 'not UTF-8 text'),
    ],
)
async def test_a_mistyped_sqlite_run_row_raises_naming_the_run(tmp_path: Path, sql: str, reason: str) -> None:
    store = SqliteStepStore(tmp_path / 'store.db')
    await store.register_run(registration('run-1'))
    with closing(sqlite3.connect(tmp_path / 'store.db')) as conn:
        conn.execute(sql, ('run-1',))
        conn.commit()
    try:
        for read in (store.get_run('run-1'), store.get_runs(['run-1'])):
            with pytest.raises(_errors.CorruptRunError, match=reason) as caught:
                await read
            assert caught.value.run_id == 'run-1'
    finally:
        await store.aclose()


async def test_a_lost_snapshot_row_is_named_not_skipped(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0), messages(0, 1), messages(0, 1, 2)])
    await sql_kit.query('DELETE FROM {snapshots} WHERE run_id = ? AND idx = 1', 'run-1')
    for after in (-1, 0):
        with pytest.raises(_errors.CorruptSnapshotError, match='the snapshot row is missing') as caught:
            await store.list_snapshots('run-1', include_interrupted=True, after=after)
        assert (caught.value.run_id, caught.value.index) == ('run-1', 1)
    assert [s.index for s in await store.list_snapshots('run-1', after=1)] == [2]


async def test_extending_a_snapshot_with_corrupt_ranges_raises(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0, 1)])
    await sql_kit.query("UPDATE {snapshots} SET ranges = 'nope' WHERE run_id = ?", 'run-1')

    with pytest.raises(_errors.CorruptSnapshotError) as caught:
        await store.save_snapshot(
            SnapshotDelta(run_id='run-1', index=1, step_index=1, state='complete', segments=[(0, 2)], messages=[])
        )

    assert (caught.value.run_id, caught.value.index) == ('run-1', 0)
    assert await sql_kit.query('SELECT COUNT(*) FROM {snapshots}') == [(1,)]


async def test_corrupt_run_metadata_is_reported(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    await store.register_run(registration('run-1'))
    await sql_kit.query("UPDATE {runs} SET metadata = '[1]' WHERE run_id = ?", 'run-1')

    with pytest.raises(_errors.DurableRecallError, match="the record of run 'run-1' is corrupt: metadata"):
        await store.get_run('run-1')
    with pytest.raises(_errors.DurableRecallError, match='metadata'):
        await store.list_runs()


async def test_a_search_names_a_corrupt_run_row_and_answers_from_the_rest(sql_kit: StoreKit) -> None:
    from durable_recall import ConversationSearch, SnapshotHistorySource
    from durable_recall.search import SearchRequest
    from tests.search._stub import context

    store = sql_kit.store
    for run_id, first in (('run-1', 0), ('run-2', 2)):
        await store.register_run(registration(run_id))
        await save_history(store, run_id, [messages(first, first + 1)])
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation', context_lines=0)
    ctx = context(conversation_id='conv')
    before = await tool.search(ctx, SearchRequest(query='question'))
    assert before.startswith('2 matches') and 'Warning' not in before

    # Run 1's row breaks after it was indexed: a process that reads it (a cold one; a warm one keeps
    # the records it showed) names it where it would have shown it.
    await sql_kit.query("UPDATE {runs} SET metadata = '[1]' WHERE run_id = ?", 'run-1')
    cold = ConversationSearch(SnapshotHistorySource(store), scope='conversation', context_lines=0)
    answer = await cold.search(ctx, SearchRequest(query='question'))
    assert answer.startswith('1 match for') and 'run: run-2' in answer
    assert answer.endswith(
        'Warning: part of the persisted history could not be read and was not searched: '
        "run 'run-1' (metadata is not a JSON object)."
    )

    # A pending run whose row does not read is named by the catch-up, and the rest is still indexed.
    await store.register_run(registration('run-3'))
    await save_history(store, 'run-3', [messages(6, 7)])
    await sql_kit.query("UPDATE {runs} SET metadata = '[1]' WHERE run_id = ?", 'run-3')
    await store.register_run(registration('run-4'))
    await save_history(store, 'run-4', [messages(8, 9)])
    fresh = ConversationSearch(SnapshotHistorySource(store), scope='conversation', context_lines=0)
    answer = await fresh.search(ctx, SearchRequest(query='question 8'))
    assert 'run: run-4' in answer
    assert "run 'run-3' (metadata is not a JSON object)" in answer
