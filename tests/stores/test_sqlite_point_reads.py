"""A search's point reads on SQLite run in the caller's thread when the connection is free, else in a worker."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from durable_recall import ConversationSearch, SnapshotHistorySource
from durable_recall.base import StoreConfigurationError, StoreUnavailableError
from durable_recall.index import update_index
from durable_recall.search import SearchRequest
from durable_recall.stores import SqliteStepStore
from durable_recall.stores.sqlite import _index as sqlite_index
from durable_recall.stores.sqlite._connection import SqliteConnection

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the functions handed to a worker thread, in order."""
    handed: list[str] = []
    real = anyio.to_thread.run_sync

    async def counting(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(function, '__qualname__', repr(function)))
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, 'run_sync', counting)
    yield handed


async def _store_with_history(path: Path) -> SqliteStepStore:
    store = SqliteStepStore(path)
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0), messages(0, 1), messages(0, 1, 2)])
    return store


async def test_a_ready_connections_point_reads_take_no_worker_thread(tmp_path: Path, hops: list[str]) -> None:
    store = await _store_with_history(tmp_path / 'store.db')
    index = store.index_storage()
    assert await update_index(store, 'conv') == []
    hops.clear()

    record = await store.get_run('run-1')
    records = await store.get_runs(['run-1', 'missing'])
    logs = await store.read_logs({'run-1': [0, 2]})
    read = await store.read_messages('run-1', [1])
    status = await index.status('conv', all_scopes=False)
    postings = await index.postings(['question', 'answer'], 'conv', all_scopes=False)
    rows = await index.load_runs(['run-1'])
    by_key = await index.runs_by_key([row.run_key for row in rows.values()])

    assert hops == []
    assert record is not None and record.run_id == 'run-1'
    assert list(records) == ['run-1']
    assert logs == {'run-1': {0: messages(0)[0], 2: messages(2)[0]}}
    assert read == {1: messages(1)[0]}
    assert status.docs == 3 and status.pending == []
    assert sorted(postings) == ['answer', 'question']
    assert [row.run_id for row in by_key.values()] == ['run-1']
    await store.aclose()


async def test_writes_and_scans_still_go_to_a_worker(tmp_path: Path, hops: list[str]) -> None:
    store = await _store_with_history(tmp_path / 'store.db')
    hops.clear()

    history = [messages(0), messages(0, 1), messages(0, 1, 2), messages(0, 1, 2, 3)]
    await save_history(store, 'run-1', history, start=3)
    saved = len(hops)
    await store.list_runs(conversation_id='conv')

    assert saved == 1
    assert len(hops) == 2
    await store.aclose()


async def test_the_first_read_of_a_file_to_migrate_goes_to_a_worker(tmp_path: Path, hops: list[str]) -> None:
    store = SqliteStepStore(tmp_path / 'store.db')  # a new file: its tables are created on first use

    first = await store.get_run('run-1')  # creates the tables: may wait on another process's write lock
    second = await store.get_run('run-1')

    assert first is None and second is None
    assert len(hops) == 1
    await store.aclose()


async def test_the_first_read_of_a_current_file_takes_no_worker_thread(tmp_path: Path, hops: list[str]) -> None:
    path = tmp_path / 'store.db'
    await (await _store_with_history(path)).aclose()
    store = SqliteStepStore(path)  # finds the file at this release's version: nothing to migrate
    hops.clear()

    first = await store.get_run('run-1')
    status = await store.index_storage().status('conv', all_scopes=False)

    assert first is not None and first.run_id == 'run-1'
    assert status.pending == ['run-1']
    assert hops == []
    await store.aclose()


async def test_a_newer_schema_written_after_open_is_refused_at_the_first_read(tmp_path: Path, hops: list[str]) -> None:
    path = tmp_path / 'store.db'
    await (await _store_with_history(path)).aclose()
    store = SqliteStepStore(path)
    with closing(sqlite3.connect(path)) as conn, conn:  # a newer release migrates the file meanwhile
        conn.execute("UPDATE dr_meta SET value = '99' WHERE key = 'schema_version'")
    hops.clear()

    with pytest.raises(StoreConfigurationError, match='99'):
        await store.get_run('run-1')
    assert hops == []
    await store.aclose()


async def test_a_reopened_connection_checks_the_schema_again(tmp_path: Path, hops: list[str]) -> None:
    path = tmp_path / 'store.db'
    store = await _store_with_history(path)
    await store.aclose()  # closed: the next read opens the file again, in a worker
    hops.clear()

    first = await store.get_run('run-1')
    second = await store.get_run('run-1')

    assert first == second and first is not None
    assert len(hops) == 1
    await store.aclose()


async def test_a_point_read_waits_in_a_worker_while_another_thread_holds_the_connection(tmp_path: Path) -> None:
    store = await _store_with_history(tmp_path / 'store.db')
    await store.get_run('run-1')
    connection: SqliteConnection = store._db
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        connection.locked(lambda conn: (held.set(), release.wait(5)))

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    ticks = 0
    record = None
    waited = 0.0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(tick)
            threading.Timer(0.3, release.set).start()
            started = time.perf_counter()
            record = await store.get_run('run-1')
            waited = time.perf_counter() - started
            group.cancel_scope.cancel()
    finally:
        release.set()
        holder.join(5)

    assert record is not None and record.run_id == 'run-1'
    assert waited >= 0.25  # it did wait for the connection...
    assert ticks >= 10  # ...in a worker: the event loop went on meanwhile
    await store.aclose()


async def test_an_inline_reads_sqlite_error_is_translated(tmp_path: Path) -> None:
    store = await _store_with_history(tmp_path / 'store.db')
    await store.get_run('run-1')
    connection: SqliteConnection = store._db

    def busy(conn: sqlite3.Connection) -> None:
        error = sqlite3.OperationalError('database is locked')
        error.sqlite_errorcode = 5  # SQLITE_BUSY, as SQLite sets it
        raise error

    with pytest.raises(StoreUnavailableError, match='busy_timeout'):
        await connection.lookup(busy)
    assert (await store.get_run('run-1')) is not None  # the connection was released
    await store.aclose()


async def test_a_close_between_the_check_and_the_lock_sends_the_read_to_a_worker(
    tmp_path: Path, hops: list[str]
) -> None:
    store = await _store_with_history(tmp_path / 'store.db')
    await store.get_run('run-1')
    connection: SqliteConnection = store._db
    real = connection._lock

    class ClosingFirst:
        """A lock whose first non-blocking acquire finds the connection closed by another thread meanwhile."""

        closed = False

        def acquire(self, blocking: bool = True) -> bool:
            if not blocking and not self.closed:
                self.closed = True
                connection.locked(lambda conn: conn.close())
                connection._conn = None
                connection._schema_ready = False
            return real.acquire(blocking)

        def release(self) -> None:
            real.release()

        def __enter__(self) -> bool:
            return real.__enter__()

        def __exit__(self, *exc: object) -> None:
            real.__exit__(*exc)  # pyright: ignore[reportArgumentType]

    connection._lock = ClosingFirst()  # pyright: ignore[reportAttributeAccessIssue]
    hops.clear()

    record = await store.get_run('run-1')

    assert record is not None and record.run_id == 'run-1'
    assert len(hops) == 1  # reopened and checked in a worker, not read from a closed connection
    connection._lock = real
    await store.aclose()


async def test_a_conversations_spans_are_read_inline_unless_there_are_many(
    tmp_path: Path, hops: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await _store_with_history(tmp_path / 'store.db')
    await store.register_run(registration('run-2'))
    await save_history(store, 'run-2', [messages(3)])
    assert await update_index(store, 'conv') == []
    index = store.index_storage()
    hops.clear()

    few = await index.scope_spans('conv')
    inline = list(hops)
    monkeypatch.setattr(sqlite_index, '_INLINE_SPANS', 1)  # two runs are now "many"
    many = await index.scope_spans('conv')

    assert inline == []
    assert len(hops) == 1
    assert few == many and len(few.run_keys) == 2
    await store.aclose()


async def test_a_cold_conversation_search_lays_its_windows_out_from_spans_inline(
    tmp_path: Path, hops: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / 'store.db'
    store = await _store_with_history(path)
    await store.register_run(registration('run-2', token='token-2'))
    await save_history(store, 'run-2', [messages(0, 1, 2, 3), messages(0, 1, 2, 3, 4)])
    assert await update_index(store, 'conv') == []
    await store.aclose()

    def no_listing(*args: object, **kwargs: object) -> None:
        raise AssertionError('the windows read the spans, not the run rows')

    monkeypatch.setattr(sqlite_index.SqliteIndex, 'scope_runs', no_listing)
    cold = SqliteStepStore(path)  # as a fresh process opens it
    search = ConversationSearch(SnapshotHistorySource(cold), scope='conversation', context_lines=2)
    hops.clear()
    ctx = RunContext[None](deps=None, model=TestModel(), usage=RunUsage(), conversation_id='conv')
    answer = await search.search(ctx, SearchRequest(query='question 4'))

    # The window reached the run before: the block opens in run-1 and says where run-2 begins.
    assert '| run: run-1 |' in answer and '(run: run-2)' in answer and 'question 2' in answer
    assert hops == []  # and nothing went to a worker thread
    await cold.aclose()
