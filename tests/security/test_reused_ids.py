"""A deleted run or conversation whose id is used again never shows its old content (step stores).

A process keeps the messages answers showed; a run id deleted and registered again restarts its
message numbers, so such a cache must be keyed by something unique to the content it holds. The
conversation stores' side of this is `tests/conversations/test_reused_ids.py`.
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import StepPersistence, StepStore
from durable_recall.index import Bm25Params
from durable_recall.search import SearchEngine, SearchRequest, SnapshotHistorySource

pytestmark = pytest.mark.anyio


def _agent(store: StepStore) -> Agent[None, str]:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('noted')])

    return Agent(FunctionModel(reply), name='support', capabilities=[StepPersistence(store)])


def engine_over(source: object) -> SearchEngine:
    return SearchEngine(
        source=source,  # pyright: ignore[reportArgumentType]
        params=Bm25Params(),
        max_matches=4,
        context_lines=1,
        max_result_bytes=6_000,
        skip_tools=(),
    )


async def test_a_deleted_then_reused_run_id_never_shows_the_old_content(store: StepStore) -> None:
    search = engine_over(SnapshotHistorySource(store))
    agent = _agent(store)
    await agent.run('my password is hunter2 zebra', run_id='support-1', conversation_id='support-1')
    first = await search.search(SearchRequest(query='zebra'), scope='conversation', conversation_id='support-1')
    assert 'hunter2' in first

    assert await store.delete_conversation('support-1') > 0
    await agent.run('favourite animal zebra', run_id='support-1', conversation_id='support-1')
    for order in ('relevance', 'newest'):
        request = SearchRequest(query='zebra', order=order)
        answer = await search.search(request, scope='conversation', conversation_id='support-1')
        assert 'favourite animal zebra' in answer
        assert 'hunter2' not in answer and 'password' not in answer
