"""The SPEC.md example, end to end: a detail compaction dropped 20 turns ago comes back verbatim."""

from __future__ import annotations

from pathlib import Path

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

from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
)

pytestmark = pytest.mark.anyio

SECRET = 'the staging database lives at pg-staging-7.internal:6432/ZEBRA_ledger'


class ScriptedSupportModel:
    """Answers chit-chat; asked to recall, it searches and quotes what the tool returned."""

    def __init__(self) -> None:
        self.tool_answers: list[str] = []
        self.contexts: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.contexts.append(list(messages))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if returns:
            self.tool_answers.append(str(returns[0].content))
            return ModelResponse(parts=[TextPart(f'From the history: {returns[0].content}')])
        prompt = next(p.content for p in reversed(last.parts) if isinstance(p, UserPromptPart))
        assert isinstance(prompt, str)
        if prompt.startswith('recall:'):
            args: dict[str, object] = {'query': prompt.removeprefix('recall:').split('|')[0].strip()}
            if '|' in prompt:
                args['run_id'] = prompt.split('|')[1].strip()
            return ModelResponse(parts=[ToolCallPart('search_conversation_history', args)])
        return ModelResponse(parts=[TextPart(f'ok, noted: {prompt[:40]}')])


def build(store: SqliteStepStore, model: ScriptedSupportModel) -> Agent[None, str]:
    return Agent(
        FunctionModel(model),
        name='support',
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            # The detail is in the first prompt, which the window keeps unless told not to.
            SlidingWindowCompaction(max_messages=10, preserve_first_user_message=False),
        ],
    )


async def test_a_dropped_detail_is_recalled_verbatim_and_only_in_its_conversation(tmp_path: Path) -> None:
    store = SqliteStepStore(database=tmp_path / 'sessions.db')
    model = ScriptedSupportModel()
    agent = build(store, model)

    history: list[ModelMessage] | None = None
    first = await agent.run(f'remember: {SECRET}', conversation_id='ticket-42')
    history = first.all_messages()
    for turn in range(20):
        result = await agent.run(f'small talk number {turn}', message_history=history, conversation_id='ticket-42')
        history = result.all_messages()
    assert SECRET not in str(history), 'the window must have dropped the detail'

    recalled = await agent.run('recall: staging database ledger', message_history=history, conversation_id='ticket-42')
    assert SECRET not in str(model.contexts[-2])  # the model's context when it decided to search
    assert SECRET in model.tool_answers[-1]
    assert f'run: …{first.run_id[-8:]}' in model.tool_answers[-1]  # long ids shown by their end
    assert SECRET in recalled.output

    # Another conversation gets nothing, whatever it searches for or names.
    for question in ('recall: staging database ledger', f'recall: staging ZEBRA_ledger | {first.run_id}'):
        await agent.run(question, conversation_id='ticket-99')
        assert SECRET not in model.tool_answers[-1]
        assert 'pg-staging-7' not in model.tool_answers[-1]
    assert model.tool_answers[-1] == f"No persisted history for run '{first.run_id}'."


async def test_a_search_never_finds_its_own_earlier_answers(tmp_path: Path) -> None:
    store = SqliteStepStore(database=tmp_path / 'echo.db')
    model = ScriptedSupportModel()
    agent = build(store, model)
    first = await agent.run(f'remember: {SECRET}', conversation_id='c')
    history = first.all_messages()
    for question in ('recall: ZEBRA_ledger', 'recall: ZEBRA_ledger'):
        result = await agent.run(question, message_history=history, conversation_id='c')
        history = result.all_messages()
    # The second search sees the first search's call and result in the store, but matches only
    # conversation text (the original, the questions, the model's own reply quoting it), never
    # the search call or the result it returned.
    answer = model.tool_answers[-1]
    hits = [line for line in answer.splitlines() if line.startswith('>[')]
    assert hits and not any('Tool' in line or 'search' in line.split(']', 1)[1][:12] for line in hits)
    assert '[an earlier search, not repeated]' in answer
    assert f'run: …{first.run_id[-8:]}' in answer
