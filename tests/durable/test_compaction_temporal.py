"""A 100-step single-run tool loop compacted inside a Temporal workflow: deterministic under replay.

The window compacts in workflow code. The 100-step loop runs once on a worker with a cache, and its
full history is replayed with the `Replayer`: no replay failure, the store unchanged, and a changed
workflow fails to replay it (the negative control). The run's output is the search answer that
quotes step 1, which the window dropped long before.

Without a worker cache (`max_cached_workflows=0`) every workflow task replays the history so far,
which costs the square of the loop's length: that run takes a shorter loop (`SHORT_STEPS`), long
enough for the window to cut at least twice before the search, and gives the same output and the
same store contents as the same loop run with a cache. `DR_LOOP_STEPS` shortens the long loop for a
quick local run.
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

from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
)
from tests.compaction._loop import TASK, step, step_result

from .._services.temporal import replay, run_workflow
from ._compaction_loop import STEPS, loop_model
from ._persistence import row_counts, sqlite_store

pytestmark = pytest.mark.anyio

SHORT_STEPS = 32
"""The window (`max_messages=40`, `keep_messages=20`, two messages a step) cuts before requests 21 and 32."""

STORE_LONG = sqlite_store('compaction-temporal-long')
STORE_SHORT = sqlite_store('compaction-temporal-short')


def _agent(name: str, store: object, steps: int) -> Agent[None, str]:
    agent = Agent(
        loop_model(steps),
        name=name,
        capabilities=[
            StepPersistence(store=store),  # pyright: ignore[reportArgumentType]
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),  # pyright: ignore[reportArgumentType]
            SlidingWindowCompaction(max_messages=40, keep_messages=20),
            TemporalDurability(),
        ],
    )
    agent.tool_plain(step)
    return agent


LONG = _agent('loop_long', STORE_LONG, STEPS)
SHORT = _agent('loop_short', STORE_SHORT, SHORT_STEPS)


async def _loop(agent: Agent[None, str], conversation_id: str) -> str:
    result = await agent.run(TASK, conversation_id=conversation_id, usage_limits=UsageLimits(request_limit=None))
    return result.output


@workflow.defn(name='durable_recall_tests.CompactedLoopLong')
class CompactedLoopLong(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [LONG]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        return await _loop(LONG, conversation_id)


@workflow.defn(name='durable_recall_tests.CompactedLoopLong')
class CompactedLoopChanged(PydanticAIWorkflow):
    """The negative control: one more command after the loop, so the history cannot replay."""

    __pydantic_ai_agents__ = [LONG]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        output = await _loop(LONG, conversation_id)
        await workflow.sleep(1)
        return output


@workflow.defn(name='durable_recall_tests.CompactedLoopShort')
class CompactedLoopShort(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [SHORT]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        return await _loop(SHORT, conversation_id)


def _quote(output: str) -> str:
    match = re.search(r'QUOTE<<(.*)>>', output, re.DOTALL)
    assert match is not None, output
    # Two executions, minutes apart: run ids and the times blocks show differ, nothing else may.
    quoted = re.sub(r'run: \S+', 'run: <id>', match.group(1))
    return re.sub(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC', '<time>', quoted)


async def _cuts(store: SqliteStepStore, conversation_id: str) -> int:
    """How many times the window cut the run's history: a snapshot holding fewer messages than the one before."""
    [run] = await store.list_runs(conversation_id=conversation_id)
    sizes = [len(snapshot.messages) for snapshot in await store.list_snapshots(run.run_id, include_interrupted=True)]
    return sum(after < before for before, after in zip(sizes, sizes[1:], strict=False))


async def test_a_100_step_compacted_loop_replays_identically(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'loop-{uuid.uuid4()}'
    ran = await run_workflow(
        temporal_env,
        CompactedLoopLong.run,
        conversation_id,
        workflows=[CompactedLoopLong],
        max_cached_workflows=1000,
        execution_timeout=timedelta(minutes=10),
    )
    assert step_result(1) in _quote(ran.result), 'the run recalls what its window dropped at step 1'
    expected = await row_counts(STORE_LONG, conversation_id)

    assert (await replay(ran.history, workflows=[CompactedLoopLong])).replay_failure is None
    assert await row_counts(STORE_LONG, conversation_id) == expected
    assert (await replay(ran.history, workflows=[CompactedLoopChanged])).replay_failure is not None


@pytest.mark.timeout(600)  # without a cache every workflow task replays the loop so far: quadratic
async def test_a_compacted_loop_runs_the_same_without_a_worker_cache(temporal_env: WorkflowEnvironment) -> None:
    cached_id, uncached_id = f'loop-{uuid.uuid4()}', f'loop-{uuid.uuid4()}'
    cached = await run_workflow(
        temporal_env, CompactedLoopShort.run, cached_id, workflows=[CompactedLoopShort], max_cached_workflows=1000
    )
    uncached = await run_workflow(
        temporal_env,
        CompactedLoopShort.run,
        uncached_id,
        workflows=[CompactedLoopShort],
        max_cached_workflows=0,
        execution_timeout=timedelta(minutes=5),
    )
    answer = _quote(cached.result)
    assert step_result(1) in answer, 'the run recalls what its window dropped at step 1'
    assert await _cuts(STORE_SHORT, cached_id) >= 2
    assert _quote(uncached.result) == answer
    assert await row_counts(STORE_SHORT, uncached_id) == await row_counts(STORE_SHORT, cached_id)
    assert await _cuts(STORE_SHORT, uncached_id) == await _cuts(STORE_SHORT, cached_id)
