"""An answer renders the messages it shows from their stored JSON, and falls back to pydantic-ai exactly.

`test_stored_render` proves the two renderers agree message by message; these check the search
path uses the fast one (ordinary messages are never validated into pydantic-ai objects), that a
shape it declines is decoded and shown the same, and that the answer is the same either way.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import PydanticAIDeprecationWarning
from pydantic_ai import messages as m

from durable_recall import ConversationSearch, InMemoryStepStore, SnapshotHistorySource, SqliteStepStore
from durable_recall.base import dump_messages, load_messages
from durable_recall.history import strip_artifacts
from durable_recall.search import SearchRequest, _shown
from durable_recall.search._shown import Shown
from durable_recall.stores import StepStore

from ..stores._helpers import registration, save_history
from ._stub import context

pytestmark = pytest.mark.anyio


def _legacy_retry() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', PydanticAIDeprecationWarning)
        return m.RetryPromptPart(content='zebra needs a city', tool_name='get_weather')  # pyright: ignore[reportDeprecated]


HISTORY: list[m.ModelMessage] = [
    m.ModelRequest(parts=[m.SystemPromptPart('You are terse.'), m.UserPromptPart('where did the zebra go?')]),
    m.ModelResponse(parts=[m.TextPart('Checking.'), m.ToolCallPart('get_weather', {'city': 'zebra town'}, 'c1')]),
    m.ModelRequest(parts=[_legacy_retry()]),  # a shape the fast path declines
    m.ModelRequest(parts=[m.ToolReturnPart('get_weather', {'sky': 'zebra stripes'}, 'c1')]),
    m.ModelResponse(parts=[m.ThinkingPart('hmm'), m.TextPart('The zebra went north.')]),
]
DECLINED = 1


@pytest.fixture(params=['memory', 'sqlite'])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StepStore]:
    store: StepStore = InMemoryStepStore() if request.param == 'memory' else SqliteStepStore(database=tmp_path / 's.db')
    await store.register_run(registration('r1', conversation_id='c1'))
    await save_history(store, 'r1', [HISTORY])
    yield store
    await store.aclose()


async def answer(store: StepStore) -> str:
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation', context_lines=5)
    return await tool.search(context(), SearchRequest(query='zebra'))


async def test_ordinary_messages_are_shown_without_pydantic_ai(
    store: StepStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[int] = []

    def counting(bodies: list[str]) -> list[m.ModelMessage]:
        decoded.append(len(bodies))
        return load_messages(bodies)

    monkeypatch.setattr(_shown, 'load_messages', counting)
    text = await answer(store)

    assert 'Tool call get_weather({"city":"zebra town"})' in text, text
    assert 'Retry [get_weather]: zebra needs a city' in text, text
    assert 'Assistant: The zebra went north.' in text, text
    assert sum(decoded) == DECLINED, text


async def test_the_answer_is_the_same_through_pydantic_ai(store: StepStore, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = await answer(store)
    monkeypatch.setattr(_shown, 'prepare_stored', lambda body: None)
    assert await answer(store) == fast


def test_a_shown_message_decodes_to_the_record_view_when_asked() -> None:
    for message in HISTORY:
        [body] = dump_messages([message])
        [stored] = load_messages([body])
        assert Shown.of(body, summary=False).message == (strip_artifacts(stored) or stored)
        assert Shown.of(stored, summary=False).message == (strip_artifacts(stored) or stored)
