"""Erasure: a deleted conversation or run is gone from the rows, the index and the database's files.

Ranking after a delete equals a fresh store's; runs inheriting a deleted run's messages keep reading
them; after `scrub` no byte of the deleted text is in the SQLite file or its write-ahead log.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks._script import generate_conversation, make_queries
from benchmarks.histories import write_conversation
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from durable_recall import ConversationSearch, SnapshotHistorySource, update_index
from durable_recall.search import SearchRequest
from durable_recall.stores import (
    ErasableStore,
    InMemoryStepStore,
    PendingMarks,
    PostgresStepStore,
    SqliteStepStore,
    StepStore,
    erase_conversation,
    erase_run,
    pending_mark_problem,
)
from tests._services.stores import StoreKit
from tests.search._stub import context
from tests.stores import test_postgres_restart
from tests.stores.test_postgres_restart import PrivateServer

from ._helpers import registration, save_history

pytestmark = pytest.mark.anyio

private_server = test_postgres_restart.private_server
"""A throwaway cluster whose data directory this test may read (the shared server's may not be readable)."""

SECRET = 'Zebraquokkasecret'
"""A word nothing else says: the analyzer keeps it whole (lowercased) in the index's postings."""


def secret_messages(n: int) -> list[ModelMessage]:
    """Messages saying the secret; the long reply is stored compressed, the short prompt as text."""
    out: list[ModelMessage] = []
    for i in range(n):
        out.append(ModelRequest(parts=[UserPromptPart(content=f'what is the {SECRET} number {i}?')]))
        out.append(ModelResponse(parts=[TextPart(content=f'It is {SECRET} {i}. ' + 'lorem ipsum ' * 40)]))
    return out


def plain_messages(n: int) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for i in range(n):
        out.append(ModelRequest(parts=[UserPromptPart(content=f'tell me about giraffes {i}')]))
        out.append(ModelResponse(parts=[TextPart(content=f'giraffes are tall {i}')]))
    return out


async def write_secret(store: StepStore, conversation_id: str, run_id: str) -> None:
    await store.register_run(registration(run_id, conversation_id=conversation_id))
    history = secret_messages(3)
    await save_history(store, run_id, [history[:2], history[:4], history])


async def write_plain(store: StepStore, conversation_id: str, run_id: str) -> None:
    await store.register_run(registration(run_id, conversation_id=conversation_id))
    history = plain_messages(2)
    await save_history(store, run_id, [history[:2], history])


def file_bytes(path: Path) -> bytes:
    data = b''
    for suffix in ('', '-wal', '-journal'):
        found = Path(f'{path}{suffix}')
        if found.exists():
            data += found.read_bytes()
    return data.lower()


async def search(store: StepStore, query: str, conversation_id: str | None, scope: str = 'conversation') -> str:
    engine = ConversationSearch(SnapshotHistorySource(store), scope=scope)  # type: ignore[arg-type]
    return await engine.search(context(conversation_id=conversation_id), SearchRequest(query=query))


async def test_an_erased_conversation_leaves_no_byte_in_the_sqlite_file_or_its_log(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    try:
        await write_secret(store, 'secret', 'run-secret')
        await write_plain(store, 'other', 'run-other')
        await update_index(store)
        assert SECRET.lower().encode() in file_bytes(path)  # the test can fail: the text is there to find

        erased = await erase_conversation(store, 'secret')

        assert erased.runs == ('run-secret',)
        assert erased.scrub is not None and erased.scrub.complete, erased.scrub
        assert SECRET.lower().encode() not in file_bytes(path)
        assert await store.list_runs(conversation_id='secret') == []
        assert 'giraffes' in await search(store, 'giraffes', 'other')
        assert (await search(store, SECRET, None, scope='all')).startswith(f"No matches for '{SECRET}' in 4 ")
    finally:
        await store.aclose()


async def test_an_erased_run_leaves_no_byte_and_runs_inheriting_it_keep_their_messages(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    try:
        conversation = generate_conversation(3, 240, conversation_id='c')
        await write_conversation(store, conversation, window=8)
        runs = [run.run_id for run in await store.list_runs(conversation_id='c')]
        assert len(runs) >= 4
        before = {run_id: [s.messages for s in await store.list_snapshots(run_id)] for run_id in runs}
        referring = await store._db.call(
            lambda conn: conn.execute(
                'SELECT COUNT(*) FROM dr_message_refs WHERE ref_run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?)',
                (runs[1],),
            ).fetchone()[0]
        )
        assert referring > 0  # the next run holds references to the deleted run's messages
        await update_index(store)

        erased = await erase_run(store, runs[1])

        assert erased.runs == (runs[1],)
        assert erased.scrub is not None and erased.scrub.complete
        for run_id in runs[:1] + runs[2:]:  # the run after it inherited its messages by reference
            assert [s.messages for s in await store.list_snapshots(run_id)] == before[run_id], run_id
        assert await store.list_snapshots(runs[1]) == []
        assert await store.get_run(runs[1]) is None
    finally:
        await store.aclose()


async def _answers(store: StepStore, queries: list[str]) -> list[str]:
    out: list[str] = []
    for query in queries:
        out.append(await search(store, query, None, scope='all'))
        out.append(await search(store, query, 'c-keep', scope='conversation'))
    return out


async def test_ranking_after_deleting_a_conversation_equals_a_store_that_never_held_it(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    keep = generate_conversation(21, 80, conversation_id='c-keep')
    gone = generate_conversation(22, 80, conversation_id='c-gone')
    for conversation in (keep, gone):
        await write_conversation(store, conversation, window=10)
    fresh = InMemoryStepStore()
    await write_conversation(fresh, keep, window=10)
    queries = make_queries(keep, 6, 5) + make_queries(gone, 4, 6)
    await _answers(store, queries)  # index both first: the delete must take them out of the statistics

    await erase_conversation(store, 'c-gone')

    assert await _answers(store, queries) == await _answers(fresh, queries)
    status = await store.index_storage().status(None, all_scopes=True)
    fresh_status = await fresh.index_storage().status(None, all_scopes=True)
    assert (status.docs, status.length) == (fresh_status.docs, fresh_status.length)


async def test_ranking_after_deleting_a_run_equals_a_fresh_index_of_what_remains(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    keep = generate_conversation(31, 240, conversation_id='c-keep')
    await write_conversation(store, keep, window=10)
    queries = make_queries(keep, 8, 7)
    await _answers(store, queries)
    runs = [run.run_id for run in await store.list_runs(conversation_id='c-keep')]

    assert (await erase_run(store, runs[2])).runs == (runs[2],)
    after = await _answers(store, queries)
    status = await store.index_storage().status(None, all_scopes=True)
    await store.index_storage().rebuild()

    assert after == await _answers(store, queries)
    rebuilt = await store.index_storage().status(None, all_scopes=True)
    assert (status.docs, status.length) == (rebuilt.docs, rebuilt.length)
    assert runs[2] not in await _answers(store, [''])


async def test_erasing_a_run_that_is_not_stored_changes_nothing(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    await write_plain(store, 'c', 'run-a')
    erased = await erase_run(store, 'no-such-run')
    assert erased.runs == () and erased.scrub is None
    assert [run.run_id for run in await store.list_runs()] == ['run-a']


async def test_the_sql_stores_are_erasable(sql_kit: StoreKit) -> None:
    assert isinstance(sql_kit.store, ErasableStore)
    assert not isinstance(InMemoryStepStore(), ErasableStore)


async def relation_files(url: str, data: Path) -> list[Path]:
    """Every file of the step store's tables, their TOAST tables and all their indexes."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute('CHECKPOINT')  # dirty buffers reach the files
        cur = await conn.execute(
            'SELECT pg_relation_filepath(c.oid) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace'
            " WHERE n.nspname IN ('public', 'pg_toast') AND c.relkind IN ('r', 't', 'i')"
            ' AND pg_relation_filepath(c.oid) IS NOT NULL'
        )
        found = [data / row[0] for row in await cur.fetchall()]
    paths: list[Path] = []
    for base in found:
        paths += [path for path in base.parent.glob(f'{base.name}*') if path.is_file()]
    return paths


def holding(paths: list[Path], token: bytes) -> list[Path]:
    return [path for path in paths if token in path.read_bytes().lower()]


@pytest.mark.postgres
async def test_after_scrub_no_postgres_relation_file_holds_the_erased_text(private_server: PrivateServer) -> None:
    store = PostgresStepStore(private_server.url)
    token = SECRET.lower().encode()
    try:
        await write_secret(store, 'secret', 'run-secret')
        await write_plain(store, 'other', 'run-other')
        await update_index(store)
        found = holding(await relation_files(private_server.url, private_server.data), token)
        assert found  # the test can fail: the text is in the tables' files

        erased = await erase_conversation(store, 'secret')

        assert erased.scrub is not None and erased.scrub.complete
        assert holding(await relation_files(private_server.url, private_server.data), token) == []
        assert 'giraffes' in await search(store, 'giraffes', 'other')
    finally:
        await store.aclose()


async def test_no_pending_mark_outlives_an_erased_run_or_conversation(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    assert isinstance(store, PendingMarks)
    await write_secret(store, 'secret', 'run-secret')
    await write_plain(store, 'other', 'run-a')
    await write_plain(store, 'other', 'run-b')
    assert {mark.run_id for mark in await store.pending_marks()} == {'run-secret', 'run-a', 'run-b'}

    await erase_run(store, 'run-a')
    await erase_conversation(store, 'secret')

    marks = await store.pending_marks()
    assert [(mark.run_id, pending_mark_problem(mark)) for mark in marks] == [('run-b', None)]
