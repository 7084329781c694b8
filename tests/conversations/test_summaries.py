"""A compaction summary saved into a conversation is searchable once, as a `summary`, on every store.

A conversation store keeps each entry once, so a summary the harness wrote into a saved history
(`SummarizingCompaction` persisting its rewrite) is one entry: the search shows it once, labelled
`Summary:`, with the role `summary`, beside the messages it restates. In memory and through the SQL
stores' persistent index alike.
"""

from __future__ import annotations

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore
from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from durable_recall import ConversationSearch
from durable_recall.conversations import ConversationStoreSource
from durable_recall.search import SearchRequest
from durable_recall.text import HARNESS_SUMMARY_KEY
from tests.search._stub import context

pytestmark = pytest.mark.anyio


def _history() -> list[ModelMessage]:
    text = 'WOMBAT summary: the ledger audit found ZEBRA'
    summary = CompactionPart(content=text, metadata={HARNESS_SUMMARY_KEY: True})
    return [
        ModelRequest(parts=[UserPromptPart('audit the ZEBRA ledger')]),
        ModelResponse(parts=[TextPart('on it')]),
        ModelRequest(parts=[summary, UserPromptPart('and now the totals')]),
        ModelResponse(parts=[TextPart('totals done')]),
        ModelRequest(parts=[CompactionPart(content='WOMBAT summary of my own', metadata={HARNESS_SUMMARY_KEY: True})]),
        ModelResponse(parts=[TextPart('noted')]),
    ]


async def _search(store: ConversationStore, query: str, roles: list[str] | None = None) -> str:
    tool = ConversationSearch(ConversationStoreSource(store), scope='conversation', context_lines=0, max_matches=10)
    return await tool.search(context(conversation_id='audit'), SearchRequest(query=query, roles=roles))


async def test_a_saved_summary_is_found_once_as_a_summary(conversation_store: ConversationStore) -> None:
    await conversation_store.save(Conversation(conversation_id='audit', messages=_history()))
    answer = await _search(conversation_store, 'WOMBAT')
    assert answer.startswith("2 matches for 'WOMBAT'"), answer
    assert answer.count('Summary: WOMBAT summary: the ledger audit found ZEBRA') == 1
    assert answer.count('Summary: WOMBAT summary of my own') == 1
    # A summary riding in a prompt stays with it; a summary alone is a `summary`.
    only = await _search(conversation_store, 'WOMBAT', roles=['summary'])
    assert only.startswith("1 match for 'WOMBAT'") and 'of my own' in only
    both = await _search(conversation_store, 'ZEBRA')
    assert 'audit the ZEBRA ledger' in both and both.count('found ZEBRA') == 1
