"""ToolResultClearing: old results become placeholders; one search call with the placeholder's query brings one back."""

from __future__ import annotations

import re
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
from pydantic_ai.usage import UsageLimits

from durable_recall import (
    ConversationSearch,
    InMemoryStepStore,
    SnapshotHistorySource,
    StepPersistence,
    ToolResultClearing,
)
from durable_recall.compaction import CLEARED_RESULT_KEY
from durable_recall.persistence import snapshot_state
from durable_recall.search import SearchRequest

from ._loop import TASK, LoopModel, head_changes, step, step_result

pytestmark = pytest.mark.anyio

PLACEHOLDER_QUERY = re.compile(r'call `search_conversation_history` with query "([^"]*)"')


def loop(steps: int) -> list[ModelMessage]:
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(TASK)])]
    for n in range(1, steps + 1):
        history.append(ModelResponse(parts=[ToolCallPart('step', {'n': n}, tool_call_id=f'call-{n}')]))
        history.append(ModelRequest(parts=[ToolReturnPart('step', step_result(n), tool_call_id=f'call-{n}')]))
    return history


def returns(history: list[ModelMessage]) -> list[ToolReturnPart[Any]]:
    return [
        part
        for message in history
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def is_cleared(part: ToolReturnPart[Any]) -> bool:
    return isinstance(part.metadata, dict) and CLEARED_RESULT_KEY in part.metadata


class TestOptions:
    @pytest.mark.parametrize(
        ('options', 'message'),
        [
            ({'max_results': 0}, 'max_results must be an int of at least 1, got 0'),
            ({'max_results': 4, 'keep_results': 4}, r'keep_results must be below max_results \(4\), got 4'),
            ({'max_results': None}, 'needs a trigger'),
            ({'max_tokens': 10, 'keep_tokens': 20}, r'keep_tokens must be below max_tokens \(10\), got 20'),
            ({'min_chars': -1}, 'min_chars must be an int of at least 0, got -1'),
        ],
    )
    def test_rejects_bad_values_naming_them(self, options: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            ToolResultClearing(**options)

    def test_exclude_tools_is_names(self) -> None:
        with pytest.raises(TypeError, match='exclude_tools must be a collection of tool names'):
            ToolResultClearing(exclude_tools='step')  # pyright: ignore[reportArgumentType]


class TestClearing:
    def test_clears_old_results_in_a_batch_keeping_structure(self) -> None:
        history = loop(7)
        cleared = ToolResultClearing(max_results=6, keep_results=2, min_chars=20).compact(history)
        assert cleared is not None and len(cleared) == len(history)
        parts = returns(cleared)
        assert [is_cleared(part) for part in parts] == [True] * 5 + [False] * 2
        assert [part.tool_call_id for part in parts] == [f'call-{n}' for n in range(1, 8)]
        assert snapshot_state(cleared) == 'complete'
        assert returns(history)[0].content == step_result(1)  # the input history is never edited in place
        # Under the trigger again: nothing more until more than 6 results are uncleared.
        assert ToolResultClearing(max_results=6, keep_results=2, min_chars=20).compact(cleared) is None

    def test_the_pending_request_and_the_search_and_short_results_stay(self) -> None:
        history = loop(3)
        history.append(
            ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': 'x'}, tool_call_id='s')])
        )
        history.append(ModelRequest(parts=[ToolReturnPart('search_conversation_history', 'y' * 300, tool_call_id='s')]))
        cleared = ToolResultClearing(max_results=1, keep_results=0, min_chars=20).compact(history)
        assert cleared is not None
        assert [is_cleared(part) for part in returns(cleared)] == [True, True, True, False]
        assert ToolResultClearing(max_results=1, keep_results=0, min_chars=10_000).compact(history) is None

    def test_placeholder_names_the_size_and_a_distinctive_query(self) -> None:
        cleared = ToolResultClearing(max_results=2, keep_results=1, min_chars=20).compact(loop(4))
        assert cleared is not None
        first = returns(cleared)[0]
        assert isinstance(first.content, str)
        assert f'({len(step_result(1))} characters)' in first.content
        match = PLACEHOLDER_QUERY.search(first.content)
        assert match is not None and {'7f3a', 'parquet'} <= set(match.group(1).split())  # rare words, not 'ledger'
        assert 'verbatim' in first.content


async def test_the_model_gets_a_cleared_result_back_verbatim_in_one_search() -> None:
    store = InMemoryStepStore()
    views: list[list[ModelMessage]] = []
    searches: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        views.append(list(messages))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == 'search_conversation_history':
                return ModelResponse(parts=[TextPart(f'QUOTE<<{part.content}>>')])
        if len(views) <= 30:
            n = len(views)
            return ModelResponse(parts=[ToolCallPart('step', {'n': n}, tool_call_id=f'call-{n}')])
        # Read the placeholder step 1's result left, and do what it says.
        (first,) = [
            p for m in messages for p in m.parts if isinstance(p, ToolReturnPart) and p.tool_call_id == 'call-1'
        ]
        match = PLACEHOLDER_QUERY.search(str(first.content))
        assert match is not None, first.content
        searches.append(match.group(1))
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': match.group(1)})])

    agent = Agent(
        FunctionModel(respond, model_name='clearing'),
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            ToolResultClearing(max_results=10, keep_results=4, min_chars=40),
        ],
    )
    agent.tool_plain(step)
    result = await agent.run(TASK, conversation_id='audit', usage_limits=UsageLimits(request_limit=None))

    assert len(searches) == 1
    answer = result.output
    assert step_result(1) in answer, answer
    assert answer.index('>[') < answer.index(step_result(1))  # the top block's match line holds it
    assert head_changes(views) <= 30 // 6 + 1
    assert max(sum(not is_cleared(p) for p in returns(view)) for view in views) <= 10


async def test_a_later_run_inheriting_cleared_results_indexes_nothing_twice() -> None:
    # A result cleared in place is inherited in another form than the earlier run persisted; the
    # later run must still leave the whole inherited history to the run that indexed it.
    store = InMemoryStepStore()

    def agent(model: LoopModel) -> Agent[None, str]:
        built = Agent(
            FunctionModel(model),
            capabilities=[
                StepPersistence(store),
                ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
                ToolResultClearing(max_results=6, keep_results=2, min_chars=20),
            ],
        )
        built.tool_plain(step)
        return built

    earlier = await agent(LoopModel(12, recall=False)).run(TASK, conversation_id='audit')
    inherited = earlier.all_messages()
    assert sum(is_cleared(part) for part in returns(inherited)) >= 5
    await agent(LoopModel(1, recall=False)).run('one more step', message_history=inherited, conversation_id='audit')
    engine = ConversationSearch(SnapshotHistorySource(store), scope='all')._engine
    for query, expected in (('row5x3', "1 match for 'row5x3'"), ('cleared', "No matches for 'cleared'")):
        answer = await engine.search(SearchRequest(query=query), scope='all', conversation_id=None)
        assert answer.startswith(expected), answer
