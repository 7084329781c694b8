"""What a warm search reads and decodes again, and what it must not skip: damage is named every time.

A warm process keeps the index rows of the runs it has shown; their per-position arrays (times,
roles, log numbers) are decoded once. On Postgres, a search's reads are single statements outside
a transaction (no `BEGIN`/`COMMIT` round trips), except on a caller-owned pool whose connections
are not autocommit, which must get every connection back idle.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from durable_recall import ConversationSearch, PostgresStepStore, SnapshotHistorySource
from durable_recall.search import SearchRequest
from tests._services.stores import StoreKit
from tests.search._stub import context

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio

_RUNS = (('run-1', 0), ('run-2', 2), ('run-3', 4))


async def _populate(store: Any) -> None:
    for run_id, first in _RUNS:
        await store.register_run(registration(run_id))
        await save_history(store, run_id, [messages(first, first + 1)])


def _search(store: Any) -> ConversationSearch:
    return ConversationSearch(SnapshotHistorySource(store), scope='conversation', context_lines=1)


async def test_a_warm_search_decodes_each_run_row_once(kit: StoreKit, monkeypatch: pytest.MonkeyPatch) -> None:
    from durable_recall.search import _scope_cache

    await _populate(kit.store)
    calls: list[str] = []
    real_floats, real_ints = _scope_cache.decode_floats, _scope_cache.decode_ints

    def floats(data: bytes) -> Any:
        calls.append('times')
        return real_floats(data)

    def ints(data: bytes) -> Any:
        calls.append('ints')
        return real_ints(data)

    monkeypatch.setattr(_scope_cache, 'decode_floats', floats)
    monkeypatch.setattr(_scope_cache, 'decode_ints', ints)
    tool = _search(kit.store)
    ctx = context(conversation_id='conv')
    first = await tool.search(ctx, SearchRequest(query='question', order='newest'))
    assert first.startswith('3 matches') and calls.count('times') == 3
    decoded = len(calls)

    again = await tool.search(ctx, SearchRequest(query='question', order='newest'))
    assert again == first
    assert len(calls) == decoded, 'a warm search decoded a run row it had decoded before'


async def test_damaged_message_times_are_named_by_every_search(sql_kit: StoreKit) -> None:
    await _populate(sql_kit.store)
    ctx = context(conversation_id='conv')
    intact = await _search(sql_kit.store).search(ctx, SearchRequest(query='question', order='newest'))
    assert 'rebuild-index' not in intact

    await sql_kit.query('UPDATE {index_runs} SET times = ? WHERE run_id = ?', b'\xff\x01\x02', 'run-2')
    tool = _search(sql_kit.store)
    for _ in range(2):  # the damaged array is not kept: the warm search meets it again, and says so
        answer = await tool.search(ctx, SearchRequest(query='question', order='newest'))
        assert "the message times of run 'run-2' do not decode" in answer
        assert 'durable-recall check --rebuild-index' in answer


@pytest.mark.postgres
async def test_a_search_on_postgres_reads_outside_transactions(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await _populate(store)
    tool = _search(store)
    ctx = context(conversation_id='conv')
    await tool.search(ctx, SearchRequest(query='answer'))  # catches the index up: writes, in transactions

    opened: list[bool] = []
    real = psycopg.AsyncConnection.transaction

    def transaction(self: psycopg.AsyncConnection[Any], *args: Any, **kwargs: Any) -> Any:
        opened.append(True)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, 'transaction', transaction)
    cold = _search(store)
    answer = await cold.search(ctx, SearchRequest(query='question', order='newest'))
    assert answer.startswith('3 matches')
    assert await store.get_runs(['run-1']) and await store.read_log_bodies({'run-1': [0, 1]})
    assert opened == []
    await store.aclose()


@pytest.mark.postgres
async def test_reads_on_a_pool_without_autocommit_return_every_connection_idle(
    postgres_url: str, postgres_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    from psycopg.pq import TransactionStatus
    from psycopg_pool import AsyncConnectionPool

    pool = AsyncConnectionPool(postgres_url, min_size=1, max_size=1, open=False)
    await pool.open(wait=True, timeout=5)
    try:
        store = PostgresStepStore(pool=pool, schema=postgres_schema)
        await _populate(store)
        ctx = context(conversation_id='conv')
        with caplog.at_level(logging.WARNING, logger='psycopg.pool'):
            answer = await _search(store).search(ctx, SearchRequest(query='question'))
            assert answer.startswith('3 matches')
            assert (await store.get_runs(['run-2']))['run-2'].run_id == 'run-2'
        assert not [record for record in caplog.records if record.name.startswith('psycopg.pool')]
        async with pool.connection() as conn:
            assert conn.info.transaction_status == TransactionStatus.IDLE
        await store.aclose()
    finally:
        await pool.close()
