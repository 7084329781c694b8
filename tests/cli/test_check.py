"""`durable-recall check`: a clean store passes, each kind of damage is named with its run, a rebuild repairs."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from durable_recall import PostgresStepStore, SqliteStepStore
from durable_recall.cli import main
from durable_recall.index import OPEN, decode_chunk, decode_ints
from durable_recall.index._chunks import pack_open
from durable_recall.index._layout import encode_ints

from ._support import OTHER, SUPPORT, Populated, populate, populate_sync, run_cli

QUERIES = ('billing export s3', 'zebra vault code', 'refund invoice')


@dataclass
class Target:
    """A populated store the test may damage, and how to run SQL on it."""

    args: list[str]
    populated: Populated
    execute: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
    table: Callable[[str], str]
    body: str = 'body'
    """The column holding compressed bodies (Postgres keeps them apart from text ones, in `data`)."""
    of_run: str = 'run_id = %s'
    """A message row's run is the one whose id is bound (SQLite's log names runs by number: schema version 13)."""


@pytest.fixture(params=['sqlite', 'postgres'])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == 'sqlite':
        path = tmp_path / 'store.db'
        populated = populate_sync(SqliteStepStore(path))

        def run_sqlite(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            with closing(sqlite3.connect(path)) as conn, conn:
                return conn.execute(sql.replace('%s', '?'), params).fetchall()

        assert main(['index', '--store', str(path), '--all']) == 0
        of_run = 'run_no = (SELECT run_no FROM dr_runs WHERE run_id = %s)'
        yield Target(['--store', str(path)], populated, run_sqlite, lambda name: name, of_run=of_run)
        return
    url: str = request.getfixturevalue('postgres_url')
    schema: str = request.getfixturevalue('postgres_schema')
    populated = populate_sync(PostgresStepStore(url, schema=schema))

    def run_postgres(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with psycopg.connect(url, autocommit=True) as conn:
            cursor = conn.execute(sql.encode(), params)
            return cursor.fetchall() if cursor.description else []

    assert main(['index', '--store', url, '--schema', schema, '--all']) == 0
    yield Target(
        ['--store', url, '--schema', schema], populated, run_postgres, lambda name: f'"{schema}".{name}', 'data'
    )


def check(capsys: pytest.CaptureFixture[str], target: Target, *more: str) -> tuple[int, dict[str, Any]]:
    result = run_cli(capsys, ['check', *target.args, '--json', *more])
    assert result.err == ''
    return result.status, json.loads(result.out)


def answers(capsys: pytest.CaptureFixture[str], target: Target) -> list[str]:
    return [
        run_cli(capsys, ['search', *target.args, '--conversation', conversation, query]).out
        for conversation in (SUPPORT, OTHER)
        for query in QUERIES
    ]


def test_a_clean_store_passes(capsys: pytest.CaptureFixture[str], target: Target) -> None:
    status, report = check(capsys, target)
    assert report['problems'] == [] and status == 0
    assert report['runs'] == 10 and report['snapshots'] > 10 and report['message_bodies'] > 20
    assert report['indexed_runs'] == 9 and report['index_terms'] > 20  # the orphan run has no snapshots
    text = run_cli(capsys, ['check', *target.args])
    assert text.status == 0 and text.out.splitlines()[-1].endswith(': no problems')


def _first_run(target: Target) -> str:
    return target.populated.support_runs[0]


def test_a_flipped_byte_in_a_compressed_body_is_named(capsys: pytest.CaptureFixture[str], target: Target) -> None:
    run_id = _first_run(target)
    rows = target.execute(
        f'SELECT seq, {target.body} FROM {target.table("dr_messages")} WHERE {target.of_run}', (run_id,)
    )
    seq, body = next((seq, bytes(body)) for seq, body in rows if isinstance(body, bytes | memoryview) and len(body) > 8)
    damaged = body[:6] + bytes([body[6] ^ 0x20]) + body[7:]
    target.execute(
        f'UPDATE {target.table("dr_messages")} SET {target.body} = %s WHERE {target.of_run} AND seq = %s',
        (damaged, run_id, seq),
    )
    status, report = check(capsys, target)
    assert status == 1
    # Named once, in the run holding the row: not in the later runs that inherited the message.
    [problem] = report['problems']
    assert (problem['run_id'], problem['scope']) == (run_id, None)
    assert f'message {seq}' in problem['what'] and problem['snapshot'] is not None
    text = run_cli(capsys, ['check', *target.args])
    assert text.status == 1 and f'run {run_id} snapshot ' in text.out


def test_a_rewritten_ranges_value_is_named(capsys: pytest.CaptureFixture[str], target: Target) -> None:
    run_id = _first_run(target)
    target.execute(
        f"UPDATE {target.table('dr_snapshots')} SET ranges = '[[0,1]]' WHERE run_id = %s AND idx = 1", (run_id,)
    )
    status, report = check(capsys, target)
    assert status == 1
    [problem] = [p for p in report['problems'] if p['scope'] is None]
    assert (problem['run_id'], problem['snapshot']) == (run_id, 1)
    assert 'the row records' in problem['what']


def test_a_deleted_message_row_is_named(capsys: pytest.CaptureFixture[str], target: Target) -> None:
    run_id = _first_run(target)
    target.execute(f'DELETE FROM {target.table("dr_messages")} WHERE {target.of_run} AND seq = 1', (run_id,))
    status, report = check(capsys, target)
    assert status == 1
    named = [p for p in report['problems'] if p['run_id'] == run_id and p['snapshot'] is not None]
    assert named and all('message 1 of the run log is missing' in p['what'] for p in named)


def test_log_rows_of_a_lost_run_row_are_named_by_number(capsys: pytest.CaptureFixture[str], target: Target) -> None:
    if target.of_run == 'run_id = %s':
        pytest.skip("Postgres's log names runs by id, with the run row's key: no number to lose")
    run_id = _first_run(target)
    [(run_no,)] = target.execute('SELECT run_no FROM dr_runs WHERE run_id = %s', (run_id,))
    # A run row lost to damage; its snapshots and log rows stay (the index is left out of this).
    target.execute('DELETE FROM dr_runs WHERE run_id = %s', (run_id,))
    target.execute('DELETE FROM dr_index_runs WHERE run_id = %s', (run_id,))

    status, report = check(capsys, target)

    assert status == 1
    named = [p['what'] for p in report['problems'] if p['run_id'] == f'run number {run_no}']
    assert any(what.endswith(f'log entries of run number {run_no}, which no run row has') for what in named)


def _tamper_lengths(target: Target, run_id: str) -> None:
    table = target.table('dr_index_runs')
    [(lengths,)] = target.execute(f'SELECT lengths FROM {table} WHERE run_id = %s', (run_id,))
    values = list(decode_ints(bytes(lengths)))
    values[-1] += 7
    target.execute(f'UPDATE {table} SET lengths = %s WHERE run_id = %s', (encode_ints(values), run_id))


def _tamper_postings(target: Target) -> None:
    """Raise one posting's tf in an open tail (its records re-packed with the first tf 3 higher)."""
    table = target.table('dr_index_postings')
    rows = target.execute(f'SELECT scope_key, term, chunk, postings FROM {table} WHERE chunk = %s', (OPEN,))
    scope_key, term, chunk, data = next(row for row in rows if decode_chunk(row[2], bytes(row[3])).keys)
    entries = decode_chunk(OPEN, bytes(data)).entries()
    key, tf, length = entries[0]
    entries[0] = (key, tf + 3, length)
    data = b''.join(pack_open(key >> 32, [(key & 0xFFFFFFFF, tf, length)]) for key, tf, length in entries)
    target.execute(
        f'UPDATE {table} SET postings = %s WHERE scope_key = %s AND term = %s AND chunk = %s',
        (bytes(data), scope_key, term, chunk),
    )


def test_a_tampered_index_is_named_and_a_rebuild_repairs_it(capsys: pytest.CaptureFixture[str], target: Target) -> None:
    before = answers(capsys, target)
    run_id = target.populated.support_runs[2]
    _tamper_lengths(target, run_id)
    _tamper_postings(target)
    target.execute(f'UPDATE {target.table("dr_index_scopes")} SET docs = -5 WHERE conversation_id = %s', (SUPPORT,))

    status, report = check(capsys, target)
    assert status == 1
    lines = run_cli(capsys, ['check', *target.args]).out
    assert f'run {run_id} index: index row differs from a fresh catch-up: lengths' in lines
    assert 'postings differ from a fresh catch-up' in lines
    assert f'conversation {SUPPORT} index: statistics say -5 documents' in lines
    # A damaged index never makes a search raise: it answers, naming the damage.
    for answer in answers(capsys, target):
        assert 'durable-recall check --rebuild-index' in answer or answer in before

    status, report = check(capsys, target, '--rebuild-index')
    assert status == 0 and report['problems'] == []
    assert report['rebuilt_index']['runs_marked'] == 9 and report['rebuilt_index']['runs_caught_up'] == 9
    assert answers(capsys, target) == before


def test_a_body_no_snapshot_names_is_checked(capsys: pytest.CaptureFixture[str], target: Target) -> None:
    """A log entry past what any snapshot names (a damaged snapshot row was deleted) is still read."""
    run_id = target.populated.runs[OTHER][0]
    [(last,)] = target.execute(f'SELECT MAX(idx) FROM {target.table("dr_snapshots")} WHERE run_id = %s', (run_id,))
    target.execute(f'DELETE FROM {target.table("dr_snapshots")} WHERE run_id = %s AND idx = %s', (run_id, last))
    [(seq,)] = target.execute(f'SELECT MAX(seq) FROM {target.table("dr_messages")} WHERE {target.of_run}', (run_id,))
    also = ', body = NULL' if target.body != 'body' else ''
    target.execute(
        f'UPDATE {target.table("dr_messages")} SET {target.body} = %s{also} WHERE {target.of_run} AND seq = %s',
        (b'\xffnot a body', run_id, seq),
    )
    status, report = check(capsys, target)
    assert status == 1
    assert any(
        p['run_id'] == run_id and f'log entry {seq}, which no snapshot names' in p['what'] for p in report['problems']
    )


def test_a_conversation_store_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    result = run_cli(capsys, ['check', '--store', str(tmp_path / 'missing.db')])
    assert result.status == 1 and 'no store at' in result.err


def test_the_memory_index_rebuilds_like_the_sql_ones() -> None:
    """`IndexStorage.rebuild` on the reference implementation: every run with snapshots pending again."""
    import asyncio

    from durable_recall import InMemoryStepStore
    from durable_recall.index import Indexer

    async def go() -> None:
        store = InMemoryStepStore()
        await populate(store)
        storage = store.index_storage()
        await Indexer.of_store(store).catch_up((await storage.status(None, all_scopes=True)).pending)
        before = await storage.status(None, all_scopes=True)
        terms = await storage.terms(None, all_scopes=True)
        assert before.pending == [] and before.docs > 0 and terms
        assert await storage.rebuild() == 9
        emptied = await storage.status(None, all_scopes=True)
        assert len(emptied.pending) == 9 and emptied.docs == 0 and await storage.terms(None, all_scopes=True) == []
        await Indexer.of_store(store).catch_up(emptied.pending)
        after = await storage.status(None, all_scopes=True)
        assert (after.docs, after.length, await storage.terms(None, all_scopes=True)) == (
            before.docs,
            before.length,
            terms,
        )

    asyncio.run(go())
