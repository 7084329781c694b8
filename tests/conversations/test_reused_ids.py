"""A conversation deleted and saved again under its id never shows what it held (every conversation store).

A process keeps the messages answers showed, and a search index restarts the numbers of a
conversation registered anew: the cache is keyed by the registration, so tenant B, saving
`support-1` after tenant A's `support-1` was deleted, never reads A's messages. Step stores: see
`tests/security/test_reused_ids.py`.
"""

from __future__ import annotations

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore

from durable_recall.conversations import ConversationStoreSource
from durable_recall.search import SearchRequest
from tests.security.test_reused_ids import engine_over

from ._helpers import echo_agent

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize('branches', [True, False], ids=['branches', 'live-only'])
async def test_a_deleted_then_reused_conversation_id_never_shows_the_old_messages(
    conversation_store: ConversationStore, branches: bool
) -> None:
    store = conversation_store
    agent = echo_agent()
    search = engine_over(ConversationStoreSource(store, branches=branches))
    first = await agent.run('my password is hunter2 zebra', conversation=Conversation(conversation_id='support-1'))
    await store.save(first, scope='tenant-a')
    for scope in ('conversation', 'all'):
        answer = await search.search(SearchRequest(query='zebra'), scope=scope, conversation_id='support-1')
        assert 'hunter2' in answer

    record = await store.read_record('support-1')
    assert record is not None
    await store.delete_record('support-1', expected_revision=record.revision)
    second = await agent.run('favourite animal zebra', conversation=Conversation(conversation_id='support-1'))
    await store.save(second, scope='tenant-b')
    for scope in ('conversation', 'all'):
        for order in ('relevance', 'newest', 'oldest'):
            request = SearchRequest(query='zebra', order=order)
            answer = await search.search(request, scope=scope, conversation_id='support-1')
            assert 'favourite animal zebra' in answer, answer
            assert 'hunter2' not in answer and 'password' not in answer, answer
