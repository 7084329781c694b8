"""Exact recall when something else rewrites the history: provider-native compaction and plain history processors.

Each runs a real agent (FunctionModel) with `StepPersistence` through a tool loop whose history is
rewritten mid-run, then checks the store's record of the run (each message the run produced once,
in order, nothing the rewrite dropped lost) and a search for a detail only the dropped part held.

* Provider-native compaction as OpenAI and Anthropic return it: a `ModelResponse` holding a
  `CompactionPart` (provider name, id, encrypted details or readable text). Stateless mode
  replaces the history with that response and the pending request (as `OpenAICompaction` does);
  stateful mode keeps the history and adds the part to a normal response.
* plain history processors (pydantic-ai's `ProcessHistory`, which persists their edit) that drop old
  messages, or replace them with a summary the application wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from durable_recall import ConversationSearch, InMemoryStepStore, SnapshotHistorySource, StepPersistence
from durable_recall.text import index_text

from ._loop import DETAIL, DETAIL_QUERY, TASK, step, step_result

pytestmark = pytest.mark.anyio

STEPS = 8
SUMMARY = 'Summary so far: steps were run and checked.'


def native_compaction(provider: str) -> ModelResponse:
    if provider == 'openai':
        part = CompactionPart(None, id='cmp_1', provider_name='openai', provider_details={'encrypted_content': 'gAAA'})
    else:
        part = CompactionPart(SUMMARY, id='cmp_2', provider_name='anthropic')
    return ModelResponse(parts=[part], model_name=provider, provider_name=provider)


class StatelessNativeCompaction(AbstractCapability[Any]):
    """What `OpenAICompaction(stateless=True)` does, with the provider's answer canned: the history becomes
    the compaction response and the pending request."""

    def __init__(self, provider: str, at: int) -> None:
        self.provider, self.at, self.done = provider, at, False

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        if not self.done and len(ctx.messages) > self.at:
            self.done = True
            ctx.messages[:] = [native_compaction(self.provider), ctx.messages[-1]]
            request_context.messages = list(ctx.messages)
        return request_context


def drop_old(messages: list[ModelMessage]) -> list[ModelMessage]:
    """A plain history processor: keep the task and the newest three tool cycles."""
    if len(messages) <= 8:
        return messages
    return [messages[0], *messages[-6:]]


def summarize_old(messages: list[ModelMessage]) -> list[ModelMessage]:
    """A history processor that replaces everything before the newest cycles with a summary of its own."""
    if len(messages) <= 8 or any(isinstance(p, CompactionPart) for m in messages for p in m.parts):
        return messages
    summary = ModelRequest(parts=[CompactionPart(SUMMARY)])
    return [messages[0], summary, *messages[-4:]]


def script(native: str | None = None) -> tuple[Callable[[list[ModelMessage], AgentInfo], ModelResponse], list[str]]:
    answers: list[str] = []
    calls = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == 'search_conversation_history':
                answers.append(str(part.content))
                return ModelResponse(parts=[TextPart('done')])
        calls += 1
        if calls <= STEPS:
            parts: list[Any] = [ToolCallPart('step', {'n': calls}, tool_call_id=f'call-{calls}')]
            if native is not None and calls == 5:
                parts.insert(0, native_compaction(native).parts[0])  # stateful: the part rides in a normal response
            return ModelResponse(parts=parts)
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': DETAIL_QUERY})])

    return respond, answers


def run_messages() -> list[str]:
    """What the run produced, as the record's searchable text: the task, then each step's call and return."""
    produced = [TASK]
    for n in range(1, STEPS + 1):
        produced += [f'step {n}', step_result(n)]
    return [*produced, 'done']


async def check(
    capabilities: list[Any], *, native: str | None = None, processors: list[Any] | None = None, drops: bool = True
) -> None:
    store = InMemoryStepStore()
    respond, answers = script(native)
    agent = Agent(
        FunctionModel(respond, model_name='rewritten'),
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            *capabilities,
            *(ProcessHistory(processor) for processor in processors or []),
        ],
    )
    agent.tool_plain(step)
    result = await agent.run(TASK, conversation_id='c')
    assert result.output == 'done'
    before_search = result.all_messages()[:-3]
    assert (DETAIL not in str(before_search)) == drops  # stateful compaction keeps the history; the provider trims

    (run,) = await store.list_runs()
    record = await SnapshotHistorySource(store).run_history(run.run_id)
    assert record is not None
    texts = [index_text(message) for message in record.messages]
    # Each message once, in order; search's own traffic (not indexed) and summaries come after or between.
    produced = [text for text in texts if text and text != SUMMARY]
    assert produced == run_messages()
    assert len(set(record.hashes)) == len(record.hashes)
    assert texts.count(SUMMARY) <= 1  # a summary is indexed at most once, as a summary
    (answer,) = answers
    assert step_result(1) in answer


@pytest.mark.parametrize('provider', ['openai', 'anthropic'])
async def test_stateless_provider_compaction(provider: str) -> None:
    await check([StatelessNativeCompaction(provider, at=6)])


@pytest.mark.parametrize('provider', ['openai', 'anthropic'])
async def test_stateful_provider_compaction(provider: str) -> None:
    await check([], native=provider, drops=False)


async def test_a_history_processor_that_drops_messages() -> None:
    await check([], processors=[drop_old])


async def test_a_history_processor_that_writes_a_summary() -> None:
    await check([], processors=[summarize_old])
