"""AutoRecall: the history's best excerpts for a new prompt reach the model before it asks."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import (
    AutoRecall,
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    StepPersistence,
    StepStore,
    ToolResultClearing,
)
from durable_recall.base import PydanticAIVersionError
from durable_recall.search import RECALL_KIND

from ._stub import context, request

pytestmark = pytest.mark.anyio

HAS_PARTS = hasattr(importlib.import_module('pydantic_ai.messages'), 'DataCapabilityPart')
needs_parts = pytest.mark.skipif(not HAS_PARTS, reason='capability parts need pydantic-ai 2.78+')
FACT = 'the ZEBRA vault combination is 4417-ALPHA'


class Seer:
    """A model that answers every prompt and keeps the recall parts of each request it is sent."""

    def __init__(self) -> None:
        self.recalled: list[list[str]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        # pydantic-ai renders a data part for the model: a note, then its content inside the kind's tag.
        texts = [str(getattr(p, 'content', '')) for p in last.parts]
        self.recalled.append([text for text in texts if '<recalled_history>' in text and 'accompanying' not in text])
        prompt = next(p.content for p in last.parts if isinstance(p, UserPromptPart))
        return ModelResponse(parts=[TextPart(f'ok: {str(prompt)[:30]}')])


def agent(store: StepStore, model: Seer, *, compaction_first: bool = False, **options: Any) -> Agent[None, str]:
    recall = AutoRecall(SnapshotHistorySource(store), **options)
    compaction = [
        SlidingWindowCompaction(max_messages=6, preserve_first_user_message=False),
        ToolResultClearing(max_results=1),
    ]
    capabilities: list[Any] = [StepPersistence(store=store)]
    capabilities += [*compaction, recall] if compaction_first else [recall, *compaction]
    capabilities.append(ConversationSearch(SnapshotHistorySource(store), scope='conversation'))
    return Agent(FunctionModel(model), name='auto', capabilities=capabilities)


async def chat(bot: Agent[None, str], prompts: list[str], cid: str = 'c1') -> list[ModelMessage]:
    history: list[ModelMessage] | None = None
    for prompt in prompts:
        result = await bot.run(prompt, message_history=history, conversation_id=cid)
        history = result.all_messages()
    assert history is not None
    return history


FILLER = [f'small talk number {n} about weather' for n in range(6)]


@needs_parts
@pytest.mark.parametrize('compaction_first', [False, True])
async def test_a_dropped_fact_is_recalled_before_the_model_asks(store: StepStore, compaction_first: bool) -> None:
    model = Seer()
    bot = agent(store, model, compaction_first=compaction_first)
    history = await chat(bot, [f'remember: {FACT}', *FILLER, 'what was the ZEBRA vault combination?'])
    assert model.recalled[0] == []  # a first turn has nothing earlier (its own prompt is not recalled)
    [recalled] = model.recalled[-1]  # one part, in the request the model was sent
    assert '4417-ALPHA' in recalled
    # Recorded once, in the prompt's request of the persisted history.
    kinds = [getattr(p, 'kind', None) for m in history for p in m.parts]
    assert kinds.count(RECALL_KIND) == 1
    # Never indexed: a search finds the fact once, in its own message, not in the recall part.
    search = ConversationSearch(SnapshotHistorySource(store), scope='conversation', context_lines=0)
    answer = await search.search(context('c1'), request('4417 alpha combination'))
    assert answer.count('4417-ALPHA') == 1


@needs_parts
async def test_nothing_is_added_without_a_match_or_for_what_the_model_sees(store: StepStore) -> None:
    model = Seer()
    bot = agent(store, model)
    await chat(bot, [f'remember: {FACT}', 'the ZEBRA vault again?', 'quantum marmalade'])
    assert model.recalled[1] == []  # the fact is in view: nothing to add
    assert model.recalled[2] == []  # no word of it matches


@needs_parts
async def test_a_conversation_never_recalls_another(store: StepStore) -> None:
    model = Seer()
    bot = agent(store, model)
    await chat(bot, [f'remember: {FACT}'], cid='other')
    await chat(bot, [*FILLER, 'what was the ZEBRA vault combination?'], cid='mine')
    assert all('4417' not in text for texts in model.recalled for text in texts)


@needs_parts
def test_bad_options_are_named(store: StepStore) -> None:
    source = SnapshotHistorySource(store)
    with pytest.raises(ValueError, match='max_bytes must be from 1000 to 4000, got 5000'):
        AutoRecall(source, max_bytes=5000)
    with pytest.raises(ValueError, match="scope must be 'conversation' or 'all', got 'nope'"):
        AutoRecall(source, scope='nope')  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match='min_score'):
        AutoRecall(source, min_score=-1)


@pytest.mark.skipif(HAS_PARTS, reason='the version error is for a pydantic-ai without capability parts')
def test_older_pydantic_ai_gets_a_clear_error(store: StepStore) -> None:
    with pytest.raises(PydanticAIVersionError, match=r'AutoRecall needs pydantic-ai-slim>=2\.78\.0'):
        AutoRecall(SnapshotHistorySource(store))
