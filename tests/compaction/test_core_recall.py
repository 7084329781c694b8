"""Recall stays exact across core compaction (pydantic-ai 2.78+), whichever capability compacts.

A run on every store (`kit`: memory, SQLite, Postgres) with `StepPersistence` and `ConversationSearch`
calls `step` a few times; step 5's tool asks core to compact (`ctx.request_compaction`), and the
capability under test answers: ours (`SlidingWindowCompaction`, `ToolResultClearing`), a plain custom
one returning its own summary, or one returning a provider's encrypted compaction. Then the model
searches for what step 1 returned, which the compaction took out of view. Checked:

* the search finds step 1's result verbatim;
* the store's record holds each message the run produced once, in order;
* a summary written into a request is recorded once, with the role `summary`, and a later run of
  the conversation that inherits the compacted history does not index it again;
* a provider's compaction part is recorded verbatim (its encrypted content is not searchable).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence, update_index
from durable_recall.compaction import SlidingWindowCompaction, ToolResultClearing
from durable_recall.compaction._summary import CORE_COMPACTION
from durable_recall.search import SearchRequest
from durable_recall.stores import StepStore
from durable_recall.text import index_text, message_role
from tests._services.stores import StoreKit
from tests.durable._persistence import row_counts
from tests.search._stub import context

from ._loop import DETAIL, DETAIL_QUERY, TASK

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not CORE_COMPACTION, reason='pydantic-ai before 2.78 has no core compaction protocol'),
]

if CORE_COMPACTION or TYPE_CHECKING:
    from pydantic_ai.capabilities.compaction import CompactionRequest, CompactionResult

STEPS = 8
WOMBAT = 'WOMBAT summary: the ledger audit ran its first steps'


def result_of(n: int) -> str:
    """Step results long enough to be cleared; step 1 holds the detail."""
    filler = ' '.join(f'row{n}x{k}' for k in range(60))
    return f'step 1 found the export at {DETAIL} {filler}' if n == 1 else f'step {n} checked batch {n}: {filler}'


class Summarizer(AbstractCapability[Any]):
    """A plain custom capability: its own summary in place of everything but the newest tool cycle."""

    async def compact_history(self, ctx: RunContext[Any], request: CompactionRequest) -> CompactionResult | None:
        part = CompactionPart(WOMBAT)
        standing = [p for p in request.messages[0].parts if isinstance(p, SystemPromptPart)]
        return CompactionResult(
            messages=[ModelRequest(parts=[*standing, part]), *request.messages[-2:]],
            part=part,
            handler='test.summarizer',
            kept_from=1,
        )


class Native(AbstractCapability[Any]):
    """A provider's compaction as it comes back: an encrypted part in a response of its own."""

    async def compact_history(self, ctx: RunContext[Any], request: CompactionRequest) -> CompactionResult | None:
        part = CompactionPart(
            None, id='cmp_1', provider_name='openai', provider_details={'encrypted_content': 'gAAAAB-ENCRYPTED'}
        )
        response = ModelResponse(parts=[part], model_name='loop', provider_name='openai')
        return CompactionResult(
            messages=[response, request.messages[-1]], part=part, handler='test.native', kept_from=1
        )


def model(answers: list[str], first: int) -> FunctionModel:
    """Calls `step` STEPS times (numbered from `first`), then searches for the detail."""
    calls = first - 1

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == 'search_conversation_history':
                answers.append(str(part.content))
                return ModelResponse(parts=[TextPart('done')])
        calls += 1
        if calls < first + STEPS:
            return ModelResponse(parts=[ToolCallPart('step', {'n': calls}, tool_call_id=f'call-{calls}')])
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': DETAIL_QUERY})])

    return FunctionModel(respond, model_name='loop')


async def run(store: StepStore, capability: AbstractCapability[Any], history: Any = None) -> Any:
    """A run of the conversation (the second, with `history`, steps on from 11 under its own prompt)."""
    answers: list[str] = []
    first = 1 if history is None else 11
    agent = Agent(
        model(answers, first),
        system_prompt='SYS: audit carefully',
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            capability,
        ],
    )

    @agent.tool
    def step(ctx: RunContext[object], n: int) -> str:
        if n == first + 4:
            ctx.request_compaction()
        return result_of(n)

    result = await agent.run(TASK if history is None else 'TASK two', conversation_id='c1', message_history=history)
    assert result.output == 'done'
    assert len(result.compactions) == 1
    (answer,) = answers
    return result, answer


def produced() -> list[str]:
    texts = [f'SYS: audit carefully\n{TASK}']
    for n in range(1, STEPS + 1):
        texts += [f'step {n}', result_of(n)]
    return texts


async def record_of(store: StepStore, run_id: str) -> list[ModelMessage]:
    record = await SnapshotHistorySource(store).run_history(run_id)
    assert record is not None
    assert len(set(record.hashes)) == len(record.hashes)
    return list(record.messages)


async def search(store: StepStore, query: str, roles: list[str] | None = None) -> str:
    await update_index(store)
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation', max_matches=10, context_lines=0)
    return await tool.search(context(conversation_id='c1'), SearchRequest(query=query, roles=roles))


CAPABILITIES = {
    'sliding_window': lambda: SlidingWindowCompaction(max_messages=100, keep_messages=4),
    'tool_result_clearing': lambda: ToolResultClearing(max_results=50, keep_results=1),
    'custom_summary': Summarizer,
}


@pytest.mark.parametrize('name', list(CAPABILITIES))
async def test_recall_is_exact_after_core_compaction(kit: StoreKit, name: str) -> None:
    result, answer = await run(kit.store, CAPABILITIES[name]())
    assert DETAIL in answer  # found verbatim, though the compaction took it out of view
    assert DETAIL not in str(result.all_messages()[:-4])  # out of view: dropped, cleared or summarized
    (stored,) = await kit.store.list_runs()
    assert await kit.log_size(stored.run_id) == (await row_counts(kit.store, 'c1')).messages  # each stored once
    messages = await record_of(kit.store, stored.run_id)
    summaries = [index_text(m) for m in messages if message_role(m) == 'summary']
    conversation = [index_text(m) for m in messages if message_role(m) != 'summary' and index_text(m)]
    assert conversation[: len(produced())] == produced()  # each once, in order; search's traffic after
    assert len(summaries) == 1  # the compaction's part, recorded once as a summary
    summary = summaries[0]
    assert ('WOMBAT' in summary) == (name == 'custom_summary')
    assert name == 'custom_summary' or 'search_conversation_history' in summary


@pytest.mark.parametrize('name', list(CAPABILITIES))
async def test_a_summary_is_indexed_once_as_a_summary_across_runs(kit: StoreKit, name: str) -> None:
    first, _ = await run(kit.store, CAPABILITIES[name]())
    word = 'WOMBAT' if name == 'custom_summary' else 'persisted'
    only = await search(kit.store, word, roles=['summary'])
    assert only.count('Summary: ') == 1, only
    # A second run inherits the compacted history (the summary with it) and compacts once more.
    _, recalled = await run(kit.store, CAPABILITIES[name](), history=first.all_messages())
    assert DETAIL in recalled
    again = await search(kit.store, word, roles=['summary'])
    assert again.count('Summary: ') == 2 - (name == 'custom_summary'), again  # a new one per compaction
    if name != 'custom_summary':
        assert again.count(DETAIL) == 0
    answer = await search(kit.store, DETAIL_QUERY)
    assert answer.count(DETAIL) == 1  # the original, stored once


async def test_a_provider_compaction_is_recorded_verbatim(kit: StoreKit) -> None:
    _, answer = await run(kit.store, Native())
    assert DETAIL in answer
    (stored,) = await kit.store.list_runs()
    messages = await record_of(kit.store, stored.run_id)
    native = [p for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, CompactionPart)]
    assert len(native) == 1
    assert native[0].provider_details == {'encrypted_content': 'gAAAAB-ENCRYPTED'} and native[0].id == 'cmp_1'
    conversation = [index_text(m) for m in messages if index_text(m)]
    assert conversation[: len(produced())] == produced()
    assert (await search(kit.store, 'gAAAAB ENCRYPTED')).startswith('No matches')  # opaque: nothing to search


class BareSummarizer(AbstractCapability[Any]):
    """Keeps nothing but the request being answered, as core allows: here, a tool return whose call it summarized."""

    async def compact_history(self, ctx: RunContext[Any], request: CompactionRequest) -> CompactionResult | None:
        part = CompactionPart(WOMBAT)
        first = request.messages[0]
        standing = (
            [p for p in first.parts if isinstance(p, SystemPromptPart)] if isinstance(first, ModelRequest) else []
        )
        head = ModelRequest(parts=[*standing, part])
        return CompactionResult(messages=[head, request.messages[-1]], part=part, handler='bare')


async def test_a_summary_that_keeps_only_the_pending_tool_return(kit: StoreKit) -> None:
    _, answer = await run(kit.store, BareSummarizer())
    assert DETAIL in answer
    (stored,) = await kit.store.list_runs()
    messages = await record_of(kit.store, stored.run_id)
    conversation = [index_text(m) for m in messages if message_role(m) != 'summary' and index_text(m)]
    assert conversation[: len(produced())] == produced()


async def test_the_record_views_of_a_head_carrying_our_part() -> None:
    from durable_recall.history import record_view, strip_artifacts, summary_view

    agent = Agent('test', capabilities=[SlidingWindowCompaction(max_messages=100, keep_messages=4)])

    @agent.tool_plain
    def step(n: int) -> str:
        return result_of(n)

    old = (await agent.run(TASK)).all_messages()
    head = (await agent.compact_history(old)).all_messages()[0]
    assert isinstance(head, ModelRequest) and isinstance(head.parts[-1], CompactionPart)
    # The snapshot record: the head lines up with the first request it was, the note is a summary.
    assert strip_artifacts(head) == replace(head, parts=head.parts[:-1])
    view = summary_view(head)
    assert view is not None and message_role(view) == 'summary' and 'persisted' in index_text(view)
    # A conversation store's entry: the note goes, as our marker does.
    assert record_view(head) == replace(head, parts=head.parts[:-1])
    # A summary riding in a prompt otherwise stays with it.
    first = old[0]
    assert isinstance(first, ModelRequest)
    riding = ModelRequest(parts=[CompactionPart(WOMBAT), *first.parts])
    assert strip_artifacts(riding) is riding and summary_view(riding) is None
