"""AutoRecall under `TemporalDurability()`: its search is an activity, and a replay yields the identical part."""

from __future__ import annotations

import uuid

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from .._services.temporal import activity_names, replay, run_workflow
from ._auto_recall_script import DETAIL, auto_capabilities, auto_model, converse, seen
from ._persistence import row_counts, sqlite_store

pytestmark = pytest.mark.anyio

STORE_CACHED = sqlite_store('auto-recall-temporal-cached')
STORE_REPLAYED = sqlite_store('auto-recall-temporal-replayed')
CACHED = Agent(auto_model(), name='auto_cached', capabilities=[*auto_capabilities(STORE_CACHED), TemporalDurability()])
REPLAYED = Agent(
    auto_model(), name='auto_replayed', capabilities=[*auto_capabilities(STORE_REPLAYED), TemporalDurability()]
)


@workflow.defn(name='durable_recall_tests.AutoRecallCached')
class AutoRecallCached(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [CACHED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(CACHED, conversation_id)


@workflow.defn(name='durable_recall_tests.AutoRecallReplayed')
class AutoRecallReplayed(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(REPLAYED, conversation_id)


async def test_recall_is_an_activity_and_identical_under_replay(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'conv-{uuid.uuid4()}'
    cached = await run_workflow(
        temporal_env, AutoRecallCached.run, conversation_id, workflows=[AutoRecallCached], max_cached_workflows=1000
    )
    replayed = await run_workflow(
        temporal_env, AutoRecallReplayed.run, conversation_id, workflows=[AutoRecallReplayed], max_cached_workflows=0
    )
    part = seen(cached.result[-1])
    assert DETAIL in part, 'run 7 must be sent what run 1 said and compaction dropped'
    assert seen(replayed.result[-1]) == part
    assert seen(cached.result[0]) == ''  # nothing earlier to recall
    assert await row_counts(STORE_REPLAYED, conversation_id) == await row_counts(STORE_CACHED, conversation_id)

    # Compatibility data: one recall activity per turn, under this name.
    names = activity_names(cached.history)
    assert names.count('agent__auto_cached__capability__auto_recall__recall') == 7, names

    before = await row_counts(STORE_REPLAYED, conversation_id)
    assert (await replay(replayed.history, workflows=[AutoRecallReplayed])).replay_failure is None
    assert await row_counts(STORE_REPLAYED, conversation_id) == before
