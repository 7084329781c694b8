"""A 100-step single-run tool loop compacted inside a Temporal workflow: deterministic under replay.

The window compacts in workflow code. Run once with a worker cache and once with
`max_cached_workflows=0` (every workflow task replays the history so far), then replayed from the
fetched history with the `Replayer`: the same output (the search answer that quotes step 1), the
same store contents, no replay failure; a changed workflow fails to replay (the negative control).
`DR_LOOP_STEPS` shortens the loop for a quick local run.
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.usage import UsageLimits
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from durable_recall import ConversationSearch, SlidingWindowCompaction, SnapshotHistorySource, StepPersistence
from tests.compaction._loop import TASK, step, step_result

from .._services.temporal import replay, run_workflow
from ._compaction_loop import loop_model
from ._persistence import row_counts, sqlite_store

pytestmark = pytest.mark.anyio

STORE_CACHED = sqlite_store('compaction-temporal-cached')
STORE_REPLAYED = sqlite_store('compaction-temporal-replayed')


def _agent(name: str, store: object, window: SlidingWindowCompaction) -> Agent[None, str]:
    agent = Agent(
        loop_model(),
        name=name,
        capabilities=[
            StepPersistence(store=store),  # pyright: ignore[reportArgumentType]
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),  # pyright: ignore[reportArgumentType]
            window,
            TemporalDurability(),
        ],
    )
    agent.tool_plain(step)
    return agent


CACHED = _agent('loop_cached', STORE_CACHED, SlidingWindowCompaction(max_messages=40, keep_messages=20))
REPLAYED = _agent('loop_replayed', STORE_REPLAYED, SlidingWindowCompaction(max_messages=40, keep_messages=20))


async def _loop(agent: Agent[None, str], conversation_id: str) -> str:
    result = await agent.run(TASK, conversation_id=conversation_id, usage_limits=UsageLimits(request_limit=None))
    return result.output


@workflow.defn(name='durable_recall_tests.CompactedLoopCached')
class CompactedLoopCached(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [CACHED]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        return await _loop(CACHED, conversation_id)


@workflow.defn(name='durable_recall_tests.CompactedLoopReplayed')
class CompactedLoopReplayed(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        return await _loop(REPLAYED, conversation_id)


@workflow.defn(name='durable_recall_tests.CompactedLoopReplayed')
class CompactedLoopChanged(PydanticAIWorkflow):
    """The negative control: one more command after the loop, so the history cannot replay."""

    __pydantic_ai_agents__ = [REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        output = await _loop(REPLAYED, conversation_id)
        await workflow.sleep(1)
        return output


def _quote(output: str) -> str:
    match = re.search(r'QUOTE<<(.*)>>', output, re.DOTALL)
    assert match is not None, output
    # Two executions, minutes apart: run ids and the times blocks show differ, nothing else may.
    quoted = re.sub(r'run: \S+', 'run: <id>', match.group(1))
    return re.sub(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC', '<time>', quoted)


@pytest.mark.timeout(1200)  # forced replay re-runs the loop so far on every workflow task: quadratic
async def test_a_100_step_compacted_loop_replays_identically(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'loop-{uuid.uuid4()}'
    cached = await run_workflow(
        temporal_env,
        CompactedLoopCached.run,
        conversation_id,
        workflows=[CompactedLoopCached],
        max_cached_workflows=1000,
        execution_timeout=timedelta(minutes=10),
    )
    replayed = await run_workflow(
        temporal_env,
        CompactedLoopReplayed.run,
        conversation_id,
        workflows=[CompactedLoopReplayed],
        max_cached_workflows=0,
        execution_timeout=timedelta(minutes=10),
    )
    answer = _quote(cached.result)
    assert step_result(1) in answer, 'the run recalls what its window dropped at step 1'
    assert _quote(replayed.result) == answer
    expected = await row_counts(STORE_CACHED, conversation_id)
    assert await row_counts(STORE_REPLAYED, conversation_id) == expected

    assert (await replay(replayed.history, workflows=[CompactedLoopReplayed])).replay_failure is None
    assert await row_counts(STORE_REPLAYED, conversation_id) == expected
    assert (await replay(replayed.history, workflows=[CompactedLoopChanged])).replay_failure is not None
