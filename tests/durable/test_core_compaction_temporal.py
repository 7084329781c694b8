"""Core compaction (pydantic-ai 2.78+) inside a Temporal workflow: deterministic under replay, stored once.

The loop of `_core_compaction` runs in workflow code: `SlidingWindowCompaction` (or, in the second
case, `ToolResultClearing`) answers core's requests (asked from workflow code, and after the model's
context overflows). Run once with a worker cache and once with `max_cached_workflows=0` (every
workflow task replays the history so far), then replayed from the fetched history with temporalio's
`Replayer`: the same answer (it quotes step 1, which the compactions took out of view), the same
store contents before and after the replay, each message stored once, and the record holding every
message once and each compaction's part once, as a summary. A changed workflow fails to replay (the
negative control).
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.usage import UsageLimits
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore, StepPersistence
from durable_recall.compaction._summary import CORE_COMPACTION, SLIDING_WINDOW_HANDLER, TOOL_RESULT_CLEARING_HANDLER
from tests.compaction._loop import DETAIL, TASK, step, step_result

from .._services.temporal import replay, run_workflow
from ._core_compaction import RequestEvery, clearing, core_model, log_rows, produced, record_texts, window
from ._persistence import STORE_DIR, row_counts

if not CORE_COMPACTION:
    pytest.skip('pydantic-ai before 2.78 has no core compaction protocol', allow_module_level=True)

pytestmark = pytest.mark.anyio

DATABASES = {
    (kind, mode): STORE_DIR / f'core-compaction-temporal-{kind}-{mode}.db'
    for kind in ('window', 'clearing')
    for mode in ('cached', 'replayed')
}
STORES = {key: SqliteStepStore(path) for key, path in DATABASES.items()}
HANDLERS = {'window': SLIDING_WINDOW_HANDLER, 'clearing': TOOL_RESULT_CLEARING_HANDLER}


def _agent(kind: str, mode: str) -> Agent[None, str]:
    store = STORES[kind, mode]
    agent = Agent(
        core_model(cleared=kind == 'clearing'),
        name=f'core_loop_{kind}_{mode}',
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            RequestEvery(),
            window() if kind == 'window' else clearing(),
            TemporalDurability(),
        ],
    )
    agent.tool_plain(step)
    return agent


CACHED = _agent('window', 'cached')
REPLAYED = _agent('window', 'replayed')
CLEARING_CACHED = _agent('clearing', 'cached')
CLEARING_REPLAYED = _agent('clearing', 'replayed')


async def _loop(agent: Agent[None, str], conversation_id: str) -> list[str]:
    result = await agent.run(TASK, conversation_id=conversation_id, usage_limits=UsageLimits(request_limit=None))
    return [
        result.output,
        *(f'{c.handler} {c.reason} {c.messages_before}->{c.messages_after}' for c in result.compactions),
    ]


@workflow.defn(name='durable_recall_tests.CoreCompactedLoopCached')
class CoreCompactedLoopCached(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [CACHED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await _loop(CACHED, conversation_id)


@workflow.defn(name='durable_recall_tests.CoreCompactedLoopReplayed')
class CoreCompactedLoopReplayed(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await _loop(REPLAYED, conversation_id)


@workflow.defn(name='durable_recall_tests.CoreClearedLoopCached')
class CoreClearedLoopCached(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [CLEARING_CACHED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await _loop(CLEARING_CACHED, conversation_id)


@workflow.defn(name='durable_recall_tests.CoreClearedLoopReplayed')
class CoreClearedLoopReplayed(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [CLEARING_REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await _loop(CLEARING_REPLAYED, conversation_id)


WORKFLOWS: dict[str, tuple[Any, Any]] = {
    'window': (CoreCompactedLoopCached, CoreCompactedLoopReplayed),
    'clearing': (CoreClearedLoopCached, CoreClearedLoopReplayed),
}


@workflow.defn(name='durable_recall_tests.CoreCompactedLoopReplayed')
class CoreCompactedLoopChanged(PydanticAIWorkflow):
    """The negative control: one more command after the loop, so the history cannot replay."""

    __pydantic_ai_agents__ = [REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        output = await _loop(REPLAYED, conversation_id)
        await workflow.sleep(1)
        return output


def _normalized(output: list[str]) -> list[str]:
    # Two executions: run ids and the times the answer's blocks show differ, nothing else may.
    quoted = re.sub(r'run: \S+', 'run: <id>', output[0])
    return [re.sub(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC', '<time>', quoted), *output[1:]]


@pytest.mark.timeout(600)
@pytest.mark.parametrize('kind', ['window', 'clearing'])
async def test_core_compaction_replays_identically_and_stores_once(
    temporal_env: WorkflowEnvironment, kind: str
) -> None:
    conversation_id = f'core-loop-{uuid.uuid4()}'
    cached_workflow, replayed_workflow = WORKFLOWS[kind]
    cached = await run_workflow(
        temporal_env,
        cached_workflow.run,
        conversation_id,
        workflows=[cached_workflow],
        max_cached_workflows=1000,
        execution_timeout=timedelta(minutes=5),
    )
    replayed = await run_workflow(
        temporal_env,
        replayed_workflow.run,
        conversation_id,
        workflows=[replayed_workflow],
        max_cached_workflows=0,
        execution_timeout=timedelta(minutes=5),
    )
    output = _normalized(cached.result)
    assert DETAIL in output[0] and step_result(1) in output[0], 'the run recalls what a compaction took out'
    compactions = output[1:]
    assert any('manual' in c for c in compactions) and any('context_overflow' in c for c in compactions)
    assert all(c.startswith(f'{HANDLERS[kind]} ') for c in compactions)
    assert _normalized(replayed.result) == output

    for mode in ('cached', 'replayed'):
        store = STORES[kind, mode]
        counts = await row_counts(store, conversation_id)
        assert log_rows(DATABASES[kind, mode], conversation_id) == counts.messages, 'every message stored once'
        conversation, summaries = await record_texts(store, conversation_id)
        assert conversation[: len(produced())] == produced()
        assert len(summaries) == len(compactions)
    expected = await row_counts(STORES[kind, 'cached'], conversation_id)
    assert await row_counts(STORES[kind, 'replayed'], conversation_id) == expected

    for run, workflow_class in ((cached, cached_workflow), (replayed, replayed_workflow)):
        assert (await replay(run.history, workflows=[workflow_class])).replay_failure is None
    assert await row_counts(STORES[kind, 'replayed'], conversation_id) == expected
    assert log_rows(DATABASES[kind, 'replayed'], conversation_id) == expected.messages
    if kind == 'window':
        assert (await replay(replayed.history, workflows=[CoreCompactedLoopChanged])).replay_failure is not None
