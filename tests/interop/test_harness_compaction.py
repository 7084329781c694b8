"""Exact recall beside pydantic-ai-harness's own compaction: its real `SummarizingCompaction`,
`ClearToolResults` and `TieredCompaction` composed with our `StepPersistence` and `ConversationSearch`.

The harness pins one exact pydantic-ai-slim (0.62 pins 2.62.0), so these run where it is installed:
CI's second venv, on the oldest pydantic-ai durable-recall supports. Elsewhere they skip.

Each test runs a real `Agent` on a `FunctionModel` through a tool loop whose history the harness
rewrites mid-run (its summarizer is a `FunctionModel` too), then checks:

* the compaction really happened and really removed the early detail from what the model saw;
* the store's record of the run keeps each message the run produced once, in order, and keeps a
  cleared tool result as it was before clearing;
* a search for the early detail finds it verbatim, once (in the run's own search call, and in a
  later run of the conversation that inherited the compacted history: a known duplication with
  `ClearToolResults` there is marked `INHERITED_CLEARED`);
* each summary the harness wrote is recorded and indexed once, with the role `summary`, apart from
  the messages it restates (see `test_each_summary_is_indexed_once_as_a_summary`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import (
    ConversationSearch,
    InMemoryStepStore,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
    StepStore,
)
from durable_recall.history import RunHistory
from durable_recall.index import Bm25Params
from durable_recall.search import SearchEngine, SearchRequest
from durable_recall.text import DEFAULT_SKIP_TOOLS, index_text, is_summary_artifact, message_role
from tests.compaction._loop import DETAIL, DETAIL_QUERY, TASK, step, step_result

harness = pytest.importorskip(
    'pydantic_ai_harness.compaction',
    reason='pydantic-ai-harness is not installed (it pins pydantic-ai-slim==2.62.0: CI runs these in its second venv)',
)

pytestmark = pytest.mark.anyio

STEPS = 12
SUMMARY_WORD = 'QUOKKA'
"""In every summary the summarizer writes and nowhere else, so a search for it tells whether a summary was indexed."""
PLACEHOLDER = '[tool result cleared]'
SEARCH = 'search_conversation_history'


def summarizer() -> FunctionModel:
    """The summarizing tier's model: a short summary that never repeats the detail."""
    written = 0

    def write(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal written
        written += 1
        return ModelResponse(parts=[TextPart(f'{SUMMARY_WORD} summary {written}: the ledger audit is under way.')])

    return FunctionModel(write, model_name='summarizer')


def summarizing() -> Any:
    return harness.SummarizingCompaction(model=summarizer(), max_messages=8, keep_messages=4)


def clearing() -> Any:
    return harness.ClearToolResults(max_messages=6, keep_pairs=2)


def tiered() -> Any:
    # Clearing alone cannot bring a dozen steps under the target, so the summarizing tier runs too.
    return harness.TieredCompaction(
        tiers=[
            harness.ClearToolResults(max_messages=1, keep_pairs=2),
            harness.SummarizingCompaction(model=summarizer(), max_messages=1, keep_messages=4),
        ],
        target_tokens=150,
    )


COMPACTIONS = {'summarizing': summarizing, 'clearing': clearing, 'tiered': tiered}


@dataclass
class Loop:
    """Calls `step` `steps` times, one call a request, then (with `recall`) searches for the detail; says `done`."""

    steps: int
    recall: bool = True
    ids: str = 'call'
    first: int = 1
    views: list[list[ModelMessage]] = field(default_factory=list[list[ModelMessage]])
    answers: list[str] = field(default_factory=list[str])

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.views.append(list(messages))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == SEARCH:
                self.answers.append(str(part.content))
                return ModelResponse(parts=[TextPart('done')])
        n = len(self.views) + self.first - 1
        if n < self.first + self.steps:
            return ModelResponse(parts=[ToolCallPart('step', {'n': n}, tool_call_id=f'{self.ids}-{n}')])
        if self.recall:
            call = ToolCallPart(
                'search_conversation_history', {'query': DETAIL_QUERY}, tool_call_id=f'{self.ids}-search'
            )
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart('done')])


def agent_for(store: StepStore, loop: Loop, compaction: Any) -> Agent[None, str]:
    agent = Agent(
        FunctionModel(loop, model_name='loop'),
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            compaction,
        ],
    )
    agent.tool_plain(step)
    return agent


def produced(steps: int, *, prompt: str = TASK, first: int = 1) -> list[str]:
    """What a run produced, as the record's searchable text (the search tool's own traffic is not indexed)."""
    texts = [prompt]
    for n in range(first, first + steps):
        texts += [f'step {n}', step_result(n)]
    return [*texts, 'done']


def text_of(view: list[ModelMessage]) -> str:
    return ' '.join(str(part) for message in view for part in message.parts)


def summaries_in(view: list[ModelMessage]) -> list[str]:
    return [
        str(part.content)
        for message in view
        for part in message.parts
        if isinstance(part, CompactionPart) and SUMMARY_WORD in str(part.content)
    ]


def written_in(views: list[list[ModelMessage]], inherited: Sequence[ModelMessage] = ()) -> Counter[str]:
    """The summaries a run records: each one a view shows that the view before did not (or the history it inherited)."""
    counts = Counter[str]()
    before = set(summaries_in(list(inherited)))
    for view in views:
        now = set(summaries_in(view))
        counts.update(now - before)
        before = now
    return counts


def check_record(record: RunHistory | None, expected: list[str]) -> None:
    """Each message the run produced once, in order; each summary apart; cleared results kept as they were."""
    assert record is not None
    texts = [index_text(message) for message in record.messages if message_role(message) != 'summary']
    assert [text for text in texts if text] == expected
    summaries = [index_text(message) for message in record.messages if message_role(message) == 'summary']
    assert all(SUMMARY_WORD in text for text in summaries)
    assert len(set(record.hashes)) == len(record.hashes)
    # The record holds a summary's text as a plain `CompactionPart`, not as the harness's artifact.
    assert not any(is_summary_artifact(part) for message in record.messages for part in message.parts)
    assert PLACEHOLDER not in ' '.join(texts)


def engine(store: StepStore) -> SearchEngine:
    return SearchEngine(
        source=SnapshotHistorySource(store),
        params=Bm25Params(),
        max_matches=10,
        context_lines=0,
        max_result_bytes=16_000,
        skip_tools=DEFAULT_SKIP_TOOLS,
    )


@pytest.fixture(params=['memory', 'sqlite'])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> StepStore:
    return InMemoryStepStore() if request.param == 'memory' else SqliteStepStore(database=tmp_path / 'store.db')


@pytest.mark.parametrize('kind', list(COMPACTIONS))
async def test_a_compacted_loop_keeps_every_message_once_and_recalls_the_detail(kind: str, store: StepStore) -> None:
    loop = Loop(STEPS)
    result = await agent_for(store, loop, COMPACTIONS[kind]()).run(TASK, conversation_id='audit')
    assert result.output == 'done'

    # The harness really rewrote the history, and the detail was gone from what the model saw.
    searching = loop.views[STEPS]
    assert DETAIL not in text_of(searching)
    if kind != 'clearing':
        assert any(summaries_in(view) for view in loop.views)
    if kind != 'summarizing':
        assert any(PLACEHOLDER in text_of(view) for view in loop.views)

    (run,) = await store.list_runs()
    check_record(await SnapshotHistorySource(store).run_history(run.run_id), produced(STEPS))

    (answer,) = loop.answers
    assert answer.count(step_result(1)) == 1


@pytest.mark.parametrize('kind', ['summarizing', 'tiered'])
async def test_each_summary_is_indexed_once_as_a_summary(kind: str, store: StepStore) -> None:
    # A summary is what the model was shown in place of what it restates: the record keeps each one
    # once, as a message of its own with the role `summary`, and the originals stay as they were.
    loop = Loop(STEPS, recall=False)
    await agent_for(store, loop, COMPACTIONS[kind]()).run(TASK, conversation_id='audit')
    written = written_in(loop.views)
    assert written

    answer = await engine(store).search(SearchRequest(query=SUMMARY_WORD), scope='all', conversation_id=None)
    total = written.total()
    assert answer.startswith(f'{total} match{"es" if total > 1 else ""} for {SUMMARY_WORD!r}'), answer
    for text, count in written.items():
        assert answer.count(f'Summary: {text}') == count
    others = SearchRequest(query=SUMMARY_WORD, roles=['user', 'assistant', 'tool', 'system'])
    assert (await engine(store).search(others, scope='all', conversation_id=None)).startswith('No matches')
    found = await engine(store).search(SearchRequest(query=DETAIL_QUERY), scope='all', conversation_id=None)
    assert found.count(step_result(1)) == 1


async def hits(store: StepStore, query: str) -> str:
    """The first line of a whole-store search's answer: how many messages match."""
    answer = await engine(store).search(SearchRequest(query=query), scope='all', conversation_id=None)
    return answer.splitlines()[0]


@pytest.mark.parametrize(
    'kind',
    # Tiered: its summarizing tier replaces the cleared results, so none is left in what the later run inherits.
    ['summarizing', 'tiered', 'clearing'],
)
async def test_a_later_run_inherits_the_compacted_history_and_still_recalls_once(kind: str, store: StepStore) -> None:
    first = Loop(STEPS, recall=False, ids='first')
    earlier = await agent_for(store, first, COMPACTIONS[kind]()).run(TASK, conversation_id='audit')
    inherited = earlier.all_messages()
    assert DETAIL not in text_of(inherited)

    prompt = 'Two more steps, then: where was the export?'
    second = Loop(2, ids='second', first=STEPS + 1)
    result = await agent_for(store, second, COMPACTIONS[kind]()).run(
        prompt, message_history=inherited, conversation_id='audit'
    )
    assert result.output == 'done'
    (answer,) = second.answers
    assert answer.count(step_result(1)) == 1

    first_run, second_run = await store.list_runs(conversation_id='audit')
    source = SnapshotHistorySource(store)
    check_record(await source.run_history(first_run.run_id), produced(STEPS))
    record = await source.run_history(second_run.run_id)
    assert record is not None
    texts = [index_text(message) for message in record.messages if message_role(message) != 'summary']
    own = [text for text in texts if text][-len(produced(2, prompt=prompt)) :]
    assert own == produced(2, prompt=prompt, first=STEPS + 1)
    # Inherited messages are searched under the run that persisted them first: one match each, and
    # no cleared result's placeholder is found. Each summary is found once, under the run that
    # wrote it (an inherited one under the earlier run).
    assert (await hits(store, f'row{STEPS}x5')).startswith(f"1 match for 'row{STEPS}x5'")
    assert (await hits(store, 'cleared')).startswith("No matches for 'cleared'")
    total = (written_in(first.views) + written_in(second.views, inherited)).total()
    expected = f'{total} match{"es" if total > 1 else ""}' if total else 'No matches'
    assert (await hits(store, SUMMARY_WORD)).startswith(f'{expected} for {SUMMARY_WORD!r}')
