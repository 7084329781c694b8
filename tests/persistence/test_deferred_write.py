"""In workflow code, a recall call waits for no write when the model still sees everything queued.

The engine's patch check is replaced here (`deferral_allowed`, exercised on the real engines in
tests/durable); what is under test is the decision, which is engine-neutral.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import InMemoryStepStore, SlidingWindowCompaction, StepPersistence
from durable_recall.persistence import _capability as persistence_capability
from durable_recall.stores import PersistBatch

pytestmark = pytest.mark.anyio

DETAIL = 'the vault key is kept in drawer 4471'


@pytest.fixture
def deferral(monkeypatch: pytest.MonkeyPatch) -> None:
    async def allowed() -> bool:
        return True

    monkeypatch.setattr(persistence_capability, 'deferral_allowed', allowed)


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    prompt = next((p.content for p in last.parts if isinstance(p, UserPromptPart)), None)
    if isinstance(prompt, str) and prompt.startswith('recall'):
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': 'vault'})])
    return ModelResponse(parts=[TextPart('ok ' * 20)])


class Recall:
    """An agent whose search tool records what the store held when it ran."""

    def __init__(self, store: InMemoryStepStore, *capabilities: Any) -> None:
        self.store = store
        self.stored_at_search: list[list[str]] = []
        self.agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store), *capabilities])

        @self.agent.tool_plain
        async def search_conversation_history(query: str) -> str:
            texts: list[str] = []
            for run in await store.list_runs():
                snapshots = await store.list_snapshots(run.run_id)
                texts += [
                    str(p.content)
                    for s in snapshots
                    for m in s.messages
                    for p in m.parts
                    if isinstance(p, UserPromptPart | TextPart | ToolReturnPart)
                ]
            self.stored_at_search.append(texts)
            return 'nothing'


def _history(*prompts: str) -> list[ModelMessage]:
    messages: list[ModelMessage] = []
    for prompt in prompts:
        messages += [ModelRequest(parts=[UserPromptPart(prompt)]), ModelResponse(parts=[TextPart('noted')])]
    return messages


async def test_a_queue_the_model_sees_whole_waits_for_the_runs_end(
    in_workflow: None, deferral: None, batches: list[PersistBatch]
) -> None:
    recall = Recall(InMemoryStepStore())
    await recall.agent.run('recall the vault', conversation_id='c')
    assert recall.stored_at_search == [[]]  # nothing written in front of the search
    assert len(batches) == 1
    assert batches[0].registration is not None
    assert len(batches[0].deltas) == 3  # the first request, the tool return, the answer


async def test_a_chat_turn_inherits_what_earlier_runs_wrote(
    in_workflow: None, deferral: None, batches: list[PersistBatch]
) -> None:
    recall = Recall(InMemoryStepStore(), SlidingWindowCompaction(max_messages=4))
    first = await recall.agent.run(DETAIL, conversation_id='c')
    history = first.all_messages()
    for prompt in ('one', 'two', 'three'):
        history = (await recall.agent.run(prompt, conversation_id='c', message_history=history)).all_messages()
    written = len(batches)
    await recall.agent.run('recall the vault', conversation_id='c', message_history=history)
    # The window dropped the first turn, but an earlier run wrote it: the search finds it stored.
    assert any(DETAIL in text for text in recall.stored_at_search[0])
    assert len(batches) == written + 1  # the run's one write, at its end


async def test_history_no_run_wrote_is_written_before_the_search(
    in_workflow: None, deferral: None, batches: list[PersistBatch]
) -> None:
    recall = Recall(InMemoryStepStore(), SlidingWindowCompaction(max_messages=4))
    imported = _history(DETAIL, 'one', 'two', 'three')
    await recall.agent.run('recall the vault', conversation_id='c', message_history=imported)
    # The window dropped the detail from the model's view and no run had written it: written first.
    assert any(DETAIL in text for text in recall.stored_at_search[0])
    assert len(batches) == 2


async def test_a_step_dropped_within_the_run_is_written_before_the_search(
    in_workflow: None, deferral: None, batches: list[PersistBatch]
) -> None:
    calls = 0

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls <= 3:  # three lookups whose returns the window then drops
            return ModelResponse(parts=[ToolCallPart('lookup', {'n': calls})])
        if calls == 4:
            return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': 'vault'})])
        return ModelResponse(parts=[TextPart('done')])

    store = InMemoryStepStore()
    agent = Agent(FunctionModel(reply), capabilities=[StepPersistence(store), SlidingWindowCompaction(max_messages=4)])
    stored: list[int] = []

    @agent.tool_plain
    def lookup(n: int) -> str:
        return f'{DETAIL} (lookup {n})'

    @agent.tool_plain
    async def search_conversation_history(query: str) -> str:
        stored.append(len(await store.list_runs()))
        return 'nothing'

    await agent.run('start', conversation_id='c')
    assert stored == [1]  # the run and its steps were written before the search ran
    assert len(batches) == 2


async def test_without_an_engine_that_allows_it_the_queue_is_written_first(
    in_workflow: None, batches: list[PersistBatch]
) -> None:
    recall = Recall(InMemoryStepStore())
    await recall.agent.run('recall the vault', conversation_id='c')
    assert recall.stored_at_search == [['recall the vault']]
    assert len(batches) == 2


def test_the_patch_name_is_pinned() -> None:
    # Compatibility data: the marker workflows recorded; renaming it would make them write first again.
    from durable_recall.persistence._patch import DEFER_WRITE_PATCH

    assert DEFER_WRITE_PATCH == 'durable-recall:defer-write-before-recall'
