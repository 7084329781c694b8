"""How many statements a search sends to Postgres: a few, whatever the query, once the index is current.

Workers sharing one Postgres pay a round trip (and a pooled connection) per statement, and each
costs more as the server gets busier. A search whose conversation's index is current reads the
scope's status with the postings and spans it needs (one statement), the index rows of the runs
it shows with their records (one), and their messages (one). Counted here by wrapping psycopg's
cursor `execute`, on a conversation written by an agent with `StepPersistence`, the search tool
and a sliding window, as a chat app writes it.

On SQLite the same reads are point reads of the store's connection (`SqliteConnection._translated`
runs each, inline or in a worker thread): at most three per search too.

A write indexes what it saved (`index_on_save`): its catch-up's statements are pinned here as well.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, PostgresStepStore, SnapshotHistorySource, StepPersistence
from durable_recall.compaction import SlidingWindowCompaction
from durable_recall.search import SearchRequest
from durable_recall.stores import SqliteStepStore, StepStore
from tests.search._stub import context

pytestmark = pytest.mark.anyio

_TURNS = 10
"""Turns of the conversation: 20 messages, a run each, each inheriting a window of the last ones."""


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(f'noted, reply number {len(messages)}')])


async def _converse(store: StepStore) -> None:
    agent = Agent(
        FunctionModel(_reply),
        capabilities=[StepPersistence(store=store), SlidingWindowCompaction(max_messages=6)],
    )
    history: list[ModelMessage] = []
    for turn in range(_TURNS):
        result = await agent.run(f'turn {turn} mentions ZEBRA{turn}', message_history=history, conversation_id='conv')
        history = result.all_messages()


@pytest.fixture
async def store(postgres_url: str, postgres_schema: str) -> AsyncIterator[PostgresStepStore]:
    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await _converse(store)
    yield store
    await store.aclose()


class _Counter:
    """Counts the statements psycopg's async cursors send (every query of the store goes through one)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.statements: list[str] = []
        real = psycopg.AsyncCursor.execute

        async def execute(cursor: psycopg.AsyncCursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            self.statements.append(query.as_string(cursor) if hasattr(query, 'as_string') else str(query))
            return await real(cursor, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, 'execute', execute)

    async def count(self, tool: ConversationSearch, query: str) -> tuple[int, str]:
        self.statements.clear()
        answer = await tool.search(context(conversation_id='conv'), SearchRequest(query=query))
        return len(self.statements), answer


def _tool(store: StepStore) -> ConversationSearch:
    return ConversationSearch(SnapshotHistorySource(store), scope='conversation')


@pytest.mark.postgres
async def test_a_warm_search_of_new_words_costs_at_most_three_statements(
    store: PostgresStepStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = _tool(store)
    assert (await tool.search(context(conversation_id='conv'), SearchRequest(query='ZEBRA0'))).startswith('1 match')
    counter = _Counter(monkeypatch)
    for turn in range(1, _TURNS):
        count, answer = await counter.count(tool, f'ZEBRA{turn} reply')
        assert f'mentions ZEBRA{turn}' in answer
        assert count <= 3, counter.statements


@pytest.mark.postgres
async def test_a_repeated_search_costs_one_statement(store: PostgresStepStore, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _tool(store)
    first = await tool.search(context(conversation_id='conv'), SearchRequest(query='ZEBRA4'))
    counter = _Counter(monkeypatch)
    count, answer = await counter.count(tool, 'ZEBRA4')
    assert answer == first
    assert count == 1, counter.statements  # the status: nothing moved, everything else is held


@pytest.mark.postgres
async def test_a_cold_process_search_costs_at_most_three_statements(
    store: PostgresStepStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _tool(store).search(context(conversation_id='conv'), SearchRequest(query='ZEBRA0'))  # the index is current
    counter = _Counter(monkeypatch)
    for turn in (2, 7):
        count, answer = await counter.count(_tool(store), f'ZEBRA{turn}')
        assert f'mentions ZEBRA{turn}' in answer
        assert count <= 3, counter.statements


@pytest.mark.postgres
async def test_a_search_after_another_worker_indexed_more_costs_at_most_three_statements(
    store: PostgresStepStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from durable_recall.index import update_index

    tool = _tool(store)
    await tool.search(context(conversation_id='conv'), SearchRequest(query='ZEBRA0 reply'))
    agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store=store)])
    await agent.run('a later turn mentions OKAPI', conversation_id='conv')
    await update_index(store, 'conv')  # as the writer does: the generation moved, nothing is pending
    counter = _Counter(monkeypatch)
    count, answer = await counter.count(tool, 'OKAPI ZEBRA0')
    assert 'mentions OKAPI' in answer and 'mentions ZEBRA0' in answer
    assert count <= 3, counter.statements


async def test_a_search_on_sqlite_makes_at_most_three_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from durable_recall.stores.sqlite._connection import SqliteConnection

    store = SqliteStepStore(str(tmp_path / 'store.db'))
    await _converse(store)
    tool = _tool(store)
    await tool.search(context(conversation_id='conv'), SearchRequest(query='ZEBRA0'))
    reads: list[object] = []
    real = SqliteConnection._translated

    def translated(self: SqliteConnection, query: Any, conn: Any) -> Any:
        reads.append(query)
        return real(self, query, conn)

    monkeypatch.setattr(SqliteConnection, '_translated', translated)
    for turn in range(1, _TURNS):
        reads.clear()
        answer = await tool.search(context(conversation_id='conv'), SearchRequest(query=f'ZEBRA{turn} reply'))
        assert f'mentions ZEBRA{turn}' in answer
        assert len(reads) <= 3, reads
    reads.clear()
    answer = await _tool(store).search(context(conversation_id='conv'), SearchRequest(query='ZEBRA5'))
    assert 'mentions ZEBRA5' in answer and len(reads) <= 3, reads  # a cold process's search
    await store.aclose()


@pytest.mark.postgres
async def test_indexing_a_write_costs_eight_statements_and_one_transaction(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a write's index catch-up (`index_on_save`) sends, for each write of a chat's turn.

    One read of the runs' index rows with their records; the listing of the new snapshots (its
    isolation level, the rows, their log entries); the log entries the record builder resumes
    from, or the inheritance check of a run's first write; and the commit: the conversation's
    lock, one read of everything the commit looks at, and one statement of all its writes.
    """
    from durable_recall.persistence import _capability

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    counter = _Counter(monkeypatch)
    per_write: list[list[str]] = []
    real = _capability.index_saved

    async def index_saved(store: StepStore, deltas: Any, **options: Any) -> None:
        start = len(counter.statements)
        await real(store, deltas, **options)
        per_write.append(counter.statements[start:])

    monkeypatch.setattr(_capability, 'index_saved', index_saved)
    await _converse(store)
    assert len(per_write) == 2 * _TURNS
    for statements in per_write[2:]:  # the conversation's first run creates its scope
        assert len(statements) == 8, statements
        assert sum('pg_advisory_xact_lock' in statement for statement in statements) == 1
        assert statements[-1].startswith('WITH scopes AS (UPDATE'), statements  # every write, one statement
    assert (await store.index_storage().status('conv', all_scopes=False)).pending == []  # nothing left to search
    answer = await _tool(store).search(context(conversation_id='conv'), SearchRequest(query='ZEBRA3'))
    assert 'mentions ZEBRA3' in answer
    await store.aclose()
