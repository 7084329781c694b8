"""Our capabilities answer pydantic-ai's core compaction protocol (2.78+): `Agent.compact_history`,
`RunContext.request_compaction` and the compact-and-retry on a context overflow.

Each compaction must hold a `CompactionPart` that says what moved out of view and that the search
tool recalls it, under a stable handler id, with `kept_from` at the start of the unchanged tail and
the standing system prompt first. Nothing to drop returns `None`, so a later capability may compact.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from durable_recall.compaction import SlidingWindowCompaction, ToolResultClearing, compaction_marker_count
from durable_recall.compaction._summary import (
    CORE_COMPACTION,
    SLIDING_WINDOW_HANDLER,
    SUMMARY_KEY,
    TOOL_RESULT_CLEARING_HANDLER,
)

from ._loop import TASK, LoopModel, step, step_result

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not CORE_COMPACTION, reason='pydantic-ai before 2.78 has no core compaction protocol'),
]

if CORE_COMPACTION or TYPE_CHECKING:
    from pydantic_ai.capabilities.compaction import CompactionRequest, CompactionResult

SYSTEM = 'SYS: you audit ledgers'


def long_result(n: int) -> str:
    return f'page {n} of the ledger export: ' + ' '.join(f'cell{n}x{k}' for k in range(80))


async def history(steps: int = 14, **agent_options: Any) -> list[ModelMessage]:
    """A finished run: the task, `steps` tool cycles, `done` (2 * steps + 2 messages)."""
    agent = Agent(LoopModel(steps, recall=False).model(), system_prompt=SYSTEM, **agent_options)
    agent.tool_plain(step)
    return (await agent.run(TASK)).all_messages()


def test_handler_ids_and_metadata_key_are_pinned() -> None:
    # Persisted on CompactionRecord.handler and in histories: changing them breaks stored data.
    assert SLIDING_WINDOW_HANDLER == 'durable_recall.sliding_window'
    assert TOOL_RESULT_CLEARING_HANDLER == 'durable_recall.tool_result_clearing'
    assert SUMMARY_KEY == 'durable_recall.compaction.summary.v1'


async def test_agent_compact_history_with_the_sliding_window() -> None:
    old = await history()
    assert len(old) == 30
    agent = Agent(
        FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('unused')])),
        capabilities=[SlidingWindowCompaction(max_messages=100, keep_messages=8)],
    )
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # no "no capability can compact" warning
        result = await agent.compact_history(old)
    new = result.all_messages()
    # The head, then the newest cycles down to the target (8, the request the run adds to compact
    # with counted): the kept part starts at a response, so 6 are left once that request is gone.
    assert len(new) == 6
    (record,) = result.compactions
    assert (record.handler, record.reason, record.kept_from, record.part_message_index) == (
        SLIDING_WINDOW_HANDLER,
        'manual',
        1,
        0,
    )
    head = new[0]
    assert isinstance(head, ModelRequest)
    assert isinstance(head.parts[0], SystemPromptPart) and head.parts[0].content == SYSTEM
    assert isinstance(head.parts[1], UserPromptPart) and head.parts[1].content == TASK
    part = head.parts[-1]
    assert isinstance(part, CompactionPart) and part is record.part and part.provider_name is None
    assert part.content is not None
    assert '24 earlier messages were moved out' in part.content and 'search_conversation_history' in part.content
    assert new[1:] == old[-5:]  # the newest cycles, unchanged


async def test_a_second_compaction_counts_on_and_keeps_one_part() -> None:
    agent = Agent(
        FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('unused')])),
        capabilities=[SlidingWindowCompaction(max_messages=100, keep_messages=8)],
    )
    first = (await agent.compact_history(await history())).all_messages()
    second = (await agent.compact_history(first)).all_messages()
    parts = [p for m in second for p in m.parts if isinstance(p, CompactionPart)]
    assert len(parts) == 1 and parts[0].content is not None
    assert parts[0].content.startswith('26 earlier messages')  # 24, then the oldest kept cycle (2)


async def test_without_the_first_prompt_the_system_prompt_stays_first() -> None:
    agent = Agent(
        FunctionModel(lambda m, i: ModelResponse(parts=[TextPart('unused')])),
        capabilities=[SlidingWindowCompaction(max_messages=100, keep_messages=8, preserve_first_user_message=False)],
    )
    new = (await agent.compact_history(await history())).all_messages()
    head = new[0]
    assert isinstance(head, ModelRequest)
    assert [p.part_kind for p in head.parts] == ['system-prompt', 'compaction']
    assert TASK not in str(new)


async def test_nothing_to_drop_leaves_it_to_the_next_capability() -> None:
    class Fallback(AbstractCapability[Any]):
        async def compact_history(self, ctx: RunContext[Any], request: CompactionRequest) -> CompactionResult | None:
            part = CompactionPart('FALLBACK summary')
            return CompactionResult(
                messages=[ModelRequest(parts=[part]), request.messages[-1]], part=part, handler='fallback'
            )

    short = [ModelRequest(parts=[UserPromptPart(TASK)]), ModelResponse(parts=[TextPart('done')])]
    ours = SlidingWindowCompaction(max_messages=10)
    assert (await Agent('test', capabilities=[ours]).compact_history(short)).compactions == []
    result = await Agent('test', capabilities=[ours, Fallback()]).compact_history(short)
    assert [record.handler for record in result.compactions] == ['fallback']


async def test_another_compaction_in_the_kept_tail_is_left_alone() -> None:
    old = await history(6)
    native = ModelResponse(parts=[CompactionPart(None, id='c1', provider_name='openai', provider_details={'x': 1})])
    mixed = [*old[:-3], native, *old[-3:]]
    ours = SlidingWindowCompaction(max_messages=100, keep_messages=8)
    result = await Agent('test', capabilities=[ours]).compact_history(mixed)
    assert result.compactions == []


async def test_tool_result_clearing_answers_compact_history() -> None:
    agent = Agent(LoopModel(6, recall=False).model(), system_prompt=SYSTEM)

    @agent.tool_plain
    def step(n: int) -> str:
        return long_result(n)

    old = (await agent.run(TASK)).all_messages()
    clearing = ToolResultClearing(max_results=20, keep_results=2)
    result = await Agent('test', capabilities=[clearing]).compact_history(old)
    (record,) = result.compactions
    assert record.handler == TOOL_RESULT_CLEARING_HANDLER
    new = result.all_messages()
    assert len(new) == len(old)  # calls and returns stay; only old contents shrink
    assert str(new).count('[The result of `step`') == 4
    part = new[0].parts[-1]
    assert isinstance(part, CompactionPart) and part.content is not None
    assert '4 older tool results were cleared' in part.content and '`step` x4' in part.content
    assert 'search_conversation_history' in part.content
    assert new[record.kept_from :] == old[record.kept_from :]  # the unchanged tail
    assert new[record.kept_from - 1] != old[record.kept_from - 1]  # the last cleared result is before it


async def test_request_compaction_from_a_tool_compacts_the_next_request() -> None:
    model = LoopModel(10, recall=False)
    agent = Agent(model.model(), capabilities=[SlidingWindowCompaction(max_messages=100, keep_messages=4)])

    @agent.tool
    def step(ctx: RunContext[object], n: int) -> str:
        if n == 8:
            ctx.request_compaction(focus='the ZEBRA export')  # focus: ignored, documented
        return step_result(n)

    result = await agent.run(TASK)
    (record,) = result.compactions
    assert record.reason == 'manual' and record.handler == SLIDING_WINDOW_HANDLER
    assert len(model.views[8]) <= 4  # the request after step 8 went out compacted
    assert len(model.views[7]) == 15  # the one before it was not


async def test_a_context_overflow_is_compacted_and_retried() -> None:
    views: list[int] = []
    calls = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        views.append(len(messages))
        if len(messages) > 12:
            raise ModelContextWindowExceededError('loop', 'prompt is too long')
        calls += 1
        if calls <= 10:
            return ModelResponse(parts=[ToolCallPart('step', {'n': calls}, tool_call_id=f'call-{calls}')])
        return ModelResponse(parts=[TextPart('done')])

    # The targets would keep 10 messages; an overflow keeps the fewest a cut can leave.
    agent = Agent(FunctionModel(respond), capabilities=[SlidingWindowCompaction(max_messages=100, keep_messages=10)])
    agent.tool_plain(step)
    result = await agent.run(TASK)
    assert result.output == 'done'
    assert [record.reason for record in result.compactions] == ['context_overflow']
    assert 13 in views and max(v for v in views if v != 13) <= 12


async def test_a_context_overflow_clears_every_clearable_result() -> None:
    calls = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        if sum(len(str(part.content)) for m in messages for part in m.parts if isinstance(part, ToolReturnPart)) > 4000:
            raise ModelContextWindowExceededError('loop', 'prompt is too long')
        calls += 1
        if calls <= 8:
            return ModelResponse(parts=[ToolCallPart('step', {'n': calls}, tool_call_id=f'call-{calls}')])
        return ModelResponse(parts=[TextPart('done')])

    agent = Agent(FunctionModel(respond), capabilities=[ToolResultClearing(max_results=50, keep_results=40)])

    @agent.tool_plain
    def step(n: int) -> str:
        return long_result(n)

    result = await agent.run(TASK)
    assert result.output == 'done'
    assert [record.handler for record in result.compactions] == [TOOL_RESULT_CLEARING_HANDLER]
    assert result.compactions[0].reason == 'context_overflow'


async def test_run_with_compact_compacts_before_the_first_request() -> None:
    old = await history()
    model = LoopModel(0, recall=False)
    agent = Agent(model.model(), capabilities=[SlidingWindowCompaction(max_messages=100, keep_messages=6)])
    result = await agent.run('and now the totals', message_history=old, compact=True)
    (record,) = result.compactions
    assert record.handler == SLIDING_WINDOW_HANDLER and record.reason == 'manual'
    (view,) = model.views
    assert len(view) <= 6 and 'and now the totals' in str(view[-1])


async def test_clearing_leaves_a_history_with_another_compaction_to_it() -> None:
    agent = Agent(LoopModel(6, recall=False).model(), system_prompt=SYSTEM)

    @agent.tool_plain
    def step(n: int) -> str:
        return long_result(n)

    old = (await agent.run(TASK)).all_messages()
    native = ModelResponse(parts=[CompactionPart('READABLE', id='c1', provider_name='anthropic')])
    mixed = [*old[:-3], native, *old[-3:]]
    clearing = ToolResultClearing(max_results=20, keep_results=2)
    assert (await Agent('test', capabilities=[clearing]).compact_history(mixed)).compactions == []
    assert len((await Agent('test', capabilities=[clearing]).compact_history(old)).compactions) == 1


async def test_the_trigger_path_and_the_hook_carry_one_running_count() -> None:
    window = SlidingWindowCompaction(max_messages=100, keep_messages=6)
    old = await history()
    compacted = (await Agent('test', capabilities=[window]).compact_history(old)).all_messages()
    part = compacted[0].parts[-1]
    assert isinstance(part, CompactionPart) and part.content is not None and part.content.startswith('26 earlier')
    # Later, the trigger path cuts again: its marker replaces the part and counts on from it.
    grown = [*compacted, *old[1:21]]  # 20 more messages: 3 + 20 = 23 > max_messages=20 below
    trigger = SlidingWindowCompaction(max_messages=20, keep_messages=6)
    again = trigger.compact(grown)
    assert again is not None
    assert not any(isinstance(p, CompactionPart) for m in again for p in m.parts)
    assert compaction_marker_count(again[0]) == 26 + len(grown) - len(again)


async def test_clearing_after_a_stateless_provider_compaction_leaves_it_alone() -> None:
    # OpenAI's stateless compaction leaves the history as its compaction response and what follows.
    agent = Agent(LoopModel(6, recall=False).model())

    @agent.tool_plain
    def step(n: int) -> str:
        return long_result(n)

    old = (await agent.run(TASK)).all_messages()
    native = ModelResponse(
        parts=[CompactionPart(None, id='c1', provider_name='openai', provider_details={'encrypted_content': 'x'})]
    )
    history = [native, *old[1:]]
    clearing = ToolResultClearing(max_results=20, keep_results=2)
    assert (await Agent('test', capabilities=[clearing]).compact_history(history)).compactions == []
