"""A compaction summary is recorded once and indexed once, as a `summary`, beside what it restates.

A run's history processor summarizes its middle with a harness-shaped summary (a request holding a
`CompactionPart` with the harness's marker), as pydantic-ai-harness's `SummarizingCompaction` does
(the real one is exercised in tests/interop). The summaries are written twice, the second restating
the first; every snapshot after a summary still carries it. On every store the search must:

* find what only a summary said, in one block labelled `Summary:`, with the role `summary`;
* find what both a summary and the original said in the original too, and each summary once;
* keep the `roles` filter exact: `summary` alone, or everything but summaries.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence, update_index
from durable_recall.search import SearchRequest
from durable_recall.stores import SqliteStepStore, StepStore
from durable_recall.stores._migrations import SCHEMA_VERSION
from durable_recall.text import HARNESS_SUMMARY_KEY
from tests._services.stores import StoreKit
from tests.stores._helpers import sqlite_log_by_run_id, sqlite_times_as_text

from ._stub import context

pytestmark = pytest.mark.anyio

STEPS = 8


def _summarize(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Keep the task and the last two messages; the middle becomes a summary (the second restates the first)."""
    if len(messages) <= 6:
        return messages
    already = any(isinstance(p, CompactionPart) for m in messages for p in m.parts)
    text = 'WOMBAT summary two: the ledger audit covers ZEBRA' if already else 'WOMBAT summary one: the ledger audit'
    summary = ModelRequest(parts=[CompactionPart(content=text, metadata={HARNESS_SUMMARY_KEY: True})])
    return [messages[0], summary, *messages[-2:]]


def _loop() -> FunctionModel:
    """Calls `step` STEPS times, one call a request, then says `done` (counted here: the model sees a summary)."""
    calls = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls <= STEPS:
            return ModelResponse(parts=[ToolCallPart('step', {'n': calls}, tool_call_id=f'call-{calls}')])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(respond)


async def _run(store: StepStore) -> None:
    agent = Agent(_loop(), capabilities=[StepPersistence(store=store), ProcessHistory(_summarize)])

    @agent.tool_plain
    def step(n: int) -> str:
        return f'step {n} read ZEBRA ledger page {n}' if n == 1 else f'step {n} done'

    await agent.run('audit the ledger', conversation_id='c1')
    await update_index(store)


async def _search(store: StepStore, query: str, roles: list[str] | None = None) -> str:
    # No context lines: a block then shows its match alone, so a role filter shows in what is shown.
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation', max_matches=10, context_lines=0)
    return await tool.search(context(conversation_id='c1'), SearchRequest(query=query, roles=roles))


async def test_what_only_a_summary_said_is_found_once_as_a_summary(kit: StoreKit) -> None:
    await _run(kit.store)
    answer = await _search(kit.store, 'WOMBAT')
    assert 'Summary: WOMBAT summary one: the ledger audit' in answer
    assert 'Summary: WOMBAT summary two' in answer
    assert answer.count('WOMBAT summary one') == 1  # carried by many snapshots, recorded once
    assert answer.count('WOMBAT summary two') == 1


async def test_the_original_is_found_beside_the_summary_that_restates_it(kit: StoreKit) -> None:
    await _run(kit.store)
    answer = await _search(kit.store, 'ZEBRA')
    assert 'step 1 read ZEBRA ledger page 1' in answer  # the original, which the window dropped
    assert answer.count('WOMBAT summary two') == 1


async def test_the_roles_filter_names_summaries(kit: StoreKit) -> None:
    await _run(kit.store)
    only = await _search(kit.store, 'ZEBRA', roles=['summary'])
    assert 'WOMBAT summary two' in only and 'step 1 read' not in only
    others = await _search(kit.store, 'ZEBRA', roles=['user', 'assistant', 'tool', 'system'])
    assert 'step 1 read' in others and 'Summary:' not in others


async def test_a_version_7_index_is_rebuilt_with_its_summaries(tmp_path: Path) -> None:
    path = tmp_path / 'v7.db'
    store = SqliteStepStore(database=path)
    await _run(store)
    await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute('DELETE FROM dr_index_postings')  # an index that holds no summary, caught up
    store = SqliteStepStore(database=path)
    try:
        assert (await _search(store, 'WOMBAT')).startswith('No matches')
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:
        sqlite_log_by_run_id(conn)
        sqlite_times_as_text(conn)
        conn.execute("UPDATE dr_meta SET value = '7' WHERE key = 'schema_version'")
    store = SqliteStepStore(database=path)
    try:
        assert 'Summary: WOMBAT summary one' in await _search(store, 'WOMBAT')
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall() == [
            (str(SCHEMA_VERSION),)
        ]
