"""Real agents, real compaction (behaviour.md §7.4): one run of five tool cycles is 12 messages.

The reference rebuilds this run as 24-26 messages under the strategies that keep a head message,
summarize, or blank tool results in place, with the prompt indexed up to five times. Each strategy
here is applied through pydantic-ai's `ProcessHistory` (which persists its edit into the run's
history, as the harness strategies do) or is our `SlidingWindowCompaction`; every one must
rebuild to exactly the 12 messages the run produced, the prompt once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
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
from durable_recall.history import strip_artifacts
from durable_recall.search import SnapshotHistorySource

from ._messages import summary

pytestmark = pytest.mark.anyio

CYCLES = 5
Processor = Callable[[list[ModelMessage]], list[ModelMessage]]


def looping_model() -> FunctionModel:
    """Calls `read_file` CYCLES times, one call per step, then answers."""
    steps = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal steps
        steps += 1
        if steps <= CYCLES:
            return ModelResponse(parts=[ToolCallPart('read_file', {'n': steps}, tool_call_id=f'call-{steps}')])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(respond, model_name='looping')


def read_file(n: int) -> str:
    """Pretend to read file `n`."""
    return f'contents of file {n}'


def keep_head(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Keep the first prompt and the newest tool cycle (a window never splits a call from its return)."""
    return [messages[0], *messages[-2:]] if len(messages) > 3 else messages


def summarize_after_head(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Keep the first prompt, a harness-shaped summary of the middle, and the last two messages."""
    return [messages[0], summary(), *messages[-2:]] if len(messages) > 4 else messages


def summarize_head(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Replace everything but the last two messages with a harness-shaped summary."""
    return [summary(), *messages[-2:]] if len(messages) > 3 else messages


def clear_old_results(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Blank every tool result but the newest, in new message objects."""
    returns = [i for i, m in enumerate(messages) if any(isinstance(p, ToolReturnPart) for p in m.parts)]
    old = set(returns[:-1])
    return [_cleared(m) if i in old else m for i, m in enumerate(messages)]


def clear_old_results_fresh_parts(messages: list[ModelMessage]) -> list[ModelMessage]:
    """As `clear_old_results`, but with freshly made parts (new timestamps): only the call id is kept."""
    returns = [i for i, m in enumerate(messages) if any(isinstance(p, ToolReturnPart) for p in m.parts)]
    old = set(returns[:-1])
    return [_cleared(m, fresh=True) if i in old else m for i, m in enumerate(messages)]


def _cleared(message: ModelMessage, *, fresh: bool = False) -> ModelMessage:
    assert isinstance(message, ModelRequest)
    parts = [
        (
            ToolReturnPart(p.tool_name, '[cleared]', tool_call_id=p.tool_call_id)
            if fresh
            else replace(p, content='[cleared]')
        )
        if isinstance(p, ToolReturnPart)
        else p
        for p in message.parts
    ]
    return ModelRequest(parts=parts)


STRATEGIES: dict[str, Callable[[], list[AbstractCapability[Any]]]] = {
    'none': lambda: [],
    'sliding-window': lambda: [SlidingWindowCompaction(max_messages=4)],
    'keep-head': lambda: [ProcessHistory(keep_head)],
    'summarize-after-head': lambda: [ProcessHistory(summarize_after_head)],
    'summarize-head': lambda: [ProcessHistory(summarize_head)],
    'clear-results': lambda: [ProcessHistory(clear_old_results)],
    'clear-results-fresh-parts': lambda: [ProcessHistory(clear_old_results_fresh_parts)],
}


def describe(message: ModelMessage) -> tuple[object, ...]:
    """What a message says, for comparing records: part by part."""
    said: list[object] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            said.append(('user', part.content))
        elif isinstance(part, ToolCallPart):
            said.append(('call', part.tool_call_id))
        elif isinstance(part, ToolReturnPart):
            said.append(('return', part.tool_call_id, part.content))
        elif isinstance(part, TextPart):
            said.append(('text', part.content))
        else:
            said.append((part.part_kind,))
    return tuple(said)


SUMMARY = (('compaction',),)
"""How `describe` shows the record's view of a summary."""

TRUE_RUN = [
    (('user', 'start TASK'),),
    *[
        step
        for n in range(1, CYCLES + 1)
        for step in ((('call', f'call-{n}'),), (('return', f'call-{n}', f'contents of file {n}'),))
    ],
    (('text', 'done'),),
]


@pytest.mark.parametrize('strategy', list(STRATEGIES))
async def test_one_run_rebuilds_to_the_messages_it_produced(strategy: str) -> None:
    store = InMemoryStepStore()
    agent = Agent(looping_model(), capabilities=[StepPersistence(store=store), *STRATEGIES[strategy]()])
    agent.tool_plain(read_file)

    result = await agent.run('start TASK')

    (run,) = await store.list_runs()
    snapshots = await store.list_snapshots(run.run_id)
    history = await SnapshotHistorySource(store).run_history(run.run_id)
    assert history is not None
    assert len(TRUE_RUN) == 12
    said = [describe(m) for m in history.messages]
    # A harness-shaped summary (always the same text here) is recorded once, apart from the run.
    assert [s for s in said if s != SUMMARY] == TRUE_RUN
    assert said.count(SUMMARY) == (1 if strategy.startswith('summarize') else 0)
    assert len(set(history.hashes)) == len(said)
    assert history.version == snapshots[-1].index
    live = [describe(m) for m in result.all_messages()]
    if strategy == 'none':
        assert live == TRUE_RUN
    elif strategy == 'sliding-window':
        # The window cuts between tool cycles and keeps the task's prompt at the head.
        assert len(live) < 12 and live[0][0] == ('user', 'start TASK')
    elif strategy.startswith('clear'):
        assert len(live) == 12 and ('return', 'call-1', '[cleared]') in [part for said in live for part in said]
    else:
        assert len(live) < 12


async def test_a_conversation_compacted_by_our_sliding_window_keeps_each_run_exact() -> None:
    store = InMemoryStepStore()
    turns = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal turns
        last = messages[-1]
        if any(isinstance(p, UserPromptPart) for p in last.parts):
            turns += 1
            return ModelResponse(parts=[ToolCallPart('read_file', {'n': turns}, tool_call_id=f'call-{turns}')])
        return ModelResponse(parts=[TextPart(f'answer {turns}')])

    agent = Agent(
        FunctionModel(respond, model_name='chat'),
        capabilities=[StepPersistence(store=store), SlidingWindowCompaction(max_messages=4)],
    )
    agent.tool_plain(read_file)

    history: list[ModelMessage] = []
    for turn in range(1, 5):
        result = await agent.run(f'question {turn}', message_history=history, conversation_id='conv')
        history = result.all_messages()

    source = SnapshotHistorySource(store)
    runs = await source.list_runs(conversation_id='conv')
    assert len(runs) == 4
    for turn, run in enumerate(runs, start=1):
        record = await source.run_history(run.run_id)
        assert record is not None
        first = (await store.list_snapshots(run.run_id))[0].messages
        inherited = [describe(m) for m in (strip_artifacts(m) for m in first[:-1]) if m is not None]
        added = [
            (('user', f'question {turn}'),),
            (('call', f'call-{turn}'),),
            (('return', f'call-{turn}', f'contents of file {turn}'),),
            (('text', f'answer {turn}'),),
        ]
        assert [describe(m) for m in record.messages] == inherited + added
