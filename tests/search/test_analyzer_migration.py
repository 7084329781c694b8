"""Schema version 7: the index is rebuilt for the stemming analyzer, which `dr_meta` names."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence, update_index
from durable_recall.search import SearchRequest
from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores._migrations import SCHEMA_VERSION
from durable_recall.stores._postgres_migrations import ANALYZER_ROW as POSTGRES_ROW
from durable_recall.stores._sqlite_migrations import ANALYZER_ROW as SQLITE_ROW
from durable_recall.text import ANALYZER_NAME, DEFAULT_ANALYZER
from durable_recall.text._analyzer import use_analyzer
from tests.stores._helpers import postgres_without_groups, sqlite_log_by_run_id, sqlite_times_as_text

from ._stub import context

pytestmark = pytest.mark.anyio


@pytest.fixture
def plain_analyzer() -> Iterator[None]:
    use_analyzer('plain')
    try:
        yield
    finally:
        use_analyzer(DEFAULT_ANALYZER)


def test_the_migrations_record_this_releases_analyzer() -> None:
    assert f"'{ANALYZER_NAME}'" in SQLITE_ROW
    assert f"'{ANALYZER_NAME}'" in POSTGRES_ROW


async def _write(store: StepStore) -> None:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('noted')])

    agent = Agent(FunctionModel(answer), capabilities=[StepPersistence(store=store)])
    await agent.run('We visited the Café Nicola last week', conversation_id='c1')
    await update_index(store)


async def _found(store: StepStore, query: str) -> bool:
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    return 'Café Nicola' in await tool.search(context(), SearchRequest(query=query))


async def test_a_version_6_sqlite_index_is_rebuilt(tmp_path: Path, plain_analyzer: None) -> None:
    path = tmp_path / 'v6.db'
    store = SqliteStepStore(database=path)
    await _write(store)  # indexed by the unstemmed analyzer, as version 6 indexed
    assert not await _found(store, 'visit')
    await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:
        sqlite_log_by_run_id(conn)
        sqlite_times_as_text(conn)
        conn.execute("UPDATE dr_meta SET value = '6' WHERE key = 'schema_version'")
        conn.execute("DELETE FROM dr_meta WHERE key = 'index_analyzer'")
    use_analyzer(DEFAULT_ANALYZER)
    store = SqliteStepStore(database=path)
    try:
        assert await _found(store, 'visit')  # only a rebuilt index holds the stem
        assert await _found(store, 'cafe')
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn:
        meta = dict(conn.execute('SELECT key, value FROM dr_meta').fetchall())
    assert meta['schema_version'] == str(SCHEMA_VERSION)
    assert meta['index_analyzer'] == ANALYZER_NAME


@pytest.mark.postgres
async def test_a_version_6_postgres_index_is_rebuilt(
    postgres_url: str, postgres_schema: str, plain_analyzer: None
) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        await _write(store)
        assert not await _found(store, 'visit')
    finally:
        await store.aclose()
    meta = f'"{postgres_schema}".dr_meta'
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await postgres_without_groups(conn, postgres_schema)
        await conn.execute(f"UPDATE {meta} SET value = '6' WHERE key = 'schema_version'".encode())
        await conn.execute(f"DELETE FROM {meta} WHERE key = 'index_analyzer'".encode())
    use_analyzer(DEFAULT_ANALYZER)
    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    try:
        assert await _found(store, 'visit')
        assert await _found(store, 'cafe')
    finally:
        await store.aclose()
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        cur = await conn.execute(f'SELECT key, value FROM {meta}'.encode())
        found = dict(await cur.fetchall())
    assert found['schema_version'] == str(SCHEMA_VERSION)
    assert found['index_analyzer'] == ANALYZER_NAME
