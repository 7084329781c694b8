"""Hostile names are data, never SQL: Postgres schema names, conversation and run ids (quotes, `;`, NUL, unicode).

Every store builds its statements from fixed text with bound values, and names its tables through
`psycopg.sql.Identifier`: a schema named like an injection gets tables of exactly that name, a
conversation named like one is a conversation, and a search for it answers (a NUL, which Postgres
cannot hold, included) without touching anything else.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import PostgresStepStore, SnapshotHistorySource, StepPersistence, StepStore
from durable_recall.search import SearchRequest

from .test_reused_ids import engine_over

pytestmark = pytest.mark.anyio

HOSTILE_IDS = [
    "o'brien; DROP TABLE dr_runs; --",
    'quote " and \\ backslash',
    '日本語の会話 ünïcödé 🦓',
    "'); DELETE FROM dr_messages WHERE ('1'='1",
    '%s %(x)s {runs} $1',
]
"""Conversation and run ids a tenant may choose (Postgres holds any text but NUL)."""

HOSTILE_SCHEMAS = ['x"; DROP SCHEMA public CASCADE; --', "it's ünï", 'UPPER lower']


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('noted')])


@pytest.fixture(params=HOSTILE_SCHEMAS)
def hostile_schema(request: pytest.FixtureRequest, postgres_url: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f'{request.param} {uuid.uuid4().hex[:8]}'
    try:
        yield name
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(sql.SQL('DROP SCHEMA IF EXISTS {} CASCADE').format(sql.Identifier(name)))


async def _fill_and_search(store: StepStore) -> None:
    agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store)])
    for index, hostile in enumerate(HOSTILE_IDS):
        await agent.run(f'ZEBRA{index} lives here', run_id=f'{hostile} run', conversation_id=hostile)
    search = engine_over(SnapshotHistorySource(store))
    for index, hostile in enumerate(HOSTILE_IDS):
        answer = await search.search(
            SearchRequest(query=f'zebra{index}'), scope='conversation', conversation_id=hostile
        )
        assert f'ZEBRA{index} lives here' in answer, answer
        by_run = SearchRequest(query=f'zebra{index}', run_id=f'{hostile} run')
        assert f'ZEBRA{index}' in await search.search(by_run, scope='all', conversation_id=None)
        other = (index + 1) % len(HOSTILE_IDS)
        answer = await search.search(
            SearchRequest(query=f'zebra{other}'), scope='conversation', conversation_id=hostile
        )
        assert f'ZEBRA{other}' not in answer
    for hostile in ('nul\x00inside', 'lone \ud800', *HOSTILE_IDS):
        for request in (SearchRequest(query='zebra0'), SearchRequest(query='zebra0', run_id=hostile)):
            answer = await search.search(request, scope='conversation', conversation_id=hostile)
            assert isinstance(answer, str) and answer
            if hostile != HOSTILE_IDS[0]:
                assert 'ZEBRA0' not in answer, answer
    assert len(await store.list_conversations()) == len(HOSTILE_IDS)  # nothing was dropped or deleted


async def test_hostile_ids_on_every_step_store(store: StepStore) -> None:
    await _fill_and_search(store)


async def test_a_hostile_schema_name_is_an_identifier(hostile_schema: str, postgres_url: str) -> None:
    import psycopg

    store = PostgresStepStore(postgres_url, schema=hostile_schema)
    try:
        await _fill_and_search(store)
    finally:
        await store.aclose()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        tables = conn.execute(
            'SELECT table_name FROM information_schema.tables WHERE table_schema = %s', (hostile_schema,)
        ).fetchall()
        assert ('dr_runs',) in tables
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'public'").fetchone() is not None


async def test_a_hostile_schema_name_for_conversations(hostile_schema: str, postgres_url: str) -> None:
    pytest.importorskip('pydantic_ai.conversation_store', reason="needs pydantic-ai's conversation store API")
    from pydantic_ai.conversation import Conversation

    from durable_recall.conversations import ConversationStoreSource, PostgresConversationStore

    store = PostgresConversationStore(postgres_url, schema=hostile_schema)
    try:
        agent = Agent(FunctionModel(_reply))
        for index, hostile in enumerate(HOSTILE_IDS):
            result = await agent.run(f'ZEBRA{index} lives here', conversation=Conversation(conversation_id=hostile))
            await store.save(result, scope=hostile)
        search = engine_over(ConversationStoreSource(store))
        for index, hostile in enumerate(HOSTILE_IDS):
            request = SearchRequest(query=f'zebra{index}')
            answer = await search.search(request, scope='conversation', conversation_id=hostile)
            assert f'ZEBRA{index} lives here' in answer, answer
        for hostile in ('nul\x00inside', 'lone \ud800'):
            answer = await search.search(SearchRequest(query='zebra0'), scope='conversation', conversation_id=hostile)
            assert isinstance(answer, str) and 'ZEBRA0' not in answer
        assert len(await store.read_records()) == len(HOSTILE_IDS)
    finally:
        await store.aclose()


def test_a_schema_postgres_cannot_name_is_refused_at_construction(postgres_url: str) -> None:
    from durable_recall.errors import StoreConfigurationError

    for bad in ('nul\x00inside', 'x' * 64, ''):
        with pytest.raises(StoreConfigurationError, match='schema'):
            PostgresStepStore(postgres_url, schema=bad)
