"""Hybrid ranking over a conversation store (`ConversationStoreSource`): vectors kept in process memory."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ..search._stub import context, request
from ._kit import EXCHANGES, ConceptEmbeddingModel, embedder, needs_numpy

pytestmark = [
    pytest.mark.anyio,
    needs_numpy,
    pytest.mark.skipif(
        importlib.util.find_spec('pydantic_ai.conversation_store') is None,
        reason='the conversation stores need pydantic-ai-slim>=2.68',
    ),
]


async def test_a_conversation_store_is_searched_by_meaning(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from durable_recall import ConversationSearch, ConversationStoreSource, SqliteConversationStore

    store = SqliteConversationStore(database=tmp_path / 'conversations.db')
    replies = iter(answer for _, answer in EXCHANGES)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(next(replies))])

    agent = Agent(FunctionModel(model))
    try:
        for said, _ in EXCHANGES:
            conversation = await store.load('c1') or Conversation(conversation_id='c1')
            await store.save(await agent.run(said, conversation=conversation))
        concepts = ConceptEmbeddingModel()
        tool = ConversationSearch(
            ConversationStoreSource(store),
            scope='conversation',
            context_lines=0,
            ranking='hybrid',
            embedder=embedder(concepts),
        )
        answer = await tool.search(context(), request('dog'))
        assert 'puppy named Biscuit' in answer.split('\n\n---\n\n')[0]
        embedded = len(concepts.documents)
        assert embedded == 2 * len(EXCHANGES)
        await tool.search(context(), request('doctor'))
        assert len(concepts.documents) == embedded  # kept between searches
    finally:
        await store.aclose()


async def test_a_deleted_then_reused_conversation_id_is_embedded_anew(tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from durable_recall import ConversationSearch, ConversationStoreSource, SqliteConversationStore

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('noted')])

    store = SqliteConversationStore(database=tmp_path / 'conversations.db')
    concepts = ConceptEmbeddingModel()
    tool = ConversationSearch(
        ConversationStoreSource(store), scope='conversation', ranking='hybrid', embedder=embedder(concepts)
    )
    agent = Agent(FunctionModel(model))
    try:
        first = await agent.run('tenant A bought an automobile', conversation=Conversation(conversation_id='c1'))
        await store.save(first)
        await tool.search(context(), request('vehicle'))
        assert any('automobile' in text for text in concepts.documents)
        record = await store.read_record('c1')
        assert record is not None
        await store.delete_record('c1', expected_revision=record.revision)
        second = await agent.run('tenant B adopted a puppy', conversation=Conversation(conversation_id='c1'))
        await store.save(second)  # as many messages as before: the index watermark is the same
        await tool.search(context(), request('vehicle'))
        assert any('puppy' in text for text in concepts.documents), 'the new messages get vectors of their own'
    finally:
        await store.aclose()
