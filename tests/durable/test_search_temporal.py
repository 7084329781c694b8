"""The search tool under `TemporalDurability()`: an activity, replay-proof, recall across compaction."""

from __future__ import annotations

import uuid

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from durable_recall.persistence import _capability as persistence_capability
from durable_recall.persistence._patch import DEFER_WRITE_PATCH

from .._services.temporal import activity_names, patch_markers, replay, run_workflow
from ._persistence import row_counts, sqlite_store
from ._recall_script import DETAIL, TURNS, converse, quoted_search, recall_capabilities, recall_model

pytestmark = pytest.mark.anyio

STORE_CACHED = sqlite_store('search-temporal-cached')
STORE_REPLAYED = sqlite_store('search-temporal-replayed')

CACHED = Agent(
    recall_model(), name='recall_cached', capabilities=[*recall_capabilities(STORE_CACHED), TemporalDurability()]
)
REPLAYED = Agent(
    recall_model(), name='recall_replayed', capabilities=[*recall_capabilities(STORE_REPLAYED), TemporalDurability()]
)


@workflow.defn(name='durable_recall_tests.RecallCached')
class RecallCached(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [CACHED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(CACHED, conversation_id)


@workflow.defn(name='durable_recall_tests.RecallReplayed')
class RecallReplayed(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(REPLAYED, conversation_id)


@workflow.defn(name='durable_recall_tests.RecallReplayed')
class RecallReplayedChanged(PydanticAIWorkflow):
    """The negative control: without the recall run, so the history cannot replay."""

    __pydantic_ai_agents__ = [REPLAYED]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(REPLAYED, conversation_id, TURNS[:-1])


async def test_search_is_an_activity_and_identical_under_replay(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'conv-{uuid.uuid4()}'
    cached = await run_workflow(
        temporal_env, RecallCached.run, conversation_id, workflows=[RecallCached], max_cached_workflows=1000
    )
    replayed = await run_workflow(
        temporal_env, RecallReplayed.run, conversation_id, workflows=[RecallReplayed], max_cached_workflows=0
    )

    answer = quoted_search(cached.result)
    assert DETAIL in answer, 'run 7 must recall what run 1 saw and compaction dropped'
    assert quoted_search(replayed.result) == answer
    assert await row_counts(STORE_REPLAYED, conversation_id) == await row_counts(STORE_CACHED, conversation_id)

    # Compatibility data: the search runs in the conversation-search toolset's activity.
    names = activity_names(cached.history)
    assert names.count('agent__recall_cached__toolset__conversation-search__call_tool') == 1
    # One write per run: what run 7 queued before its search (its prompt and the call) is still in
    # the model's view, so the search runs without a write in front of it.
    assert names.count('agent__recall_cached__capability__step_persistence__save_steps') == 7
    assert patch_markers(cached.history).count(DEFER_WRITE_PATCH) == 1

    before = await row_counts(STORE_REPLAYED, conversation_id)
    assert (await replay(replayed.history, workflows=[RecallReplayed])).replay_failure is None
    assert await row_counts(STORE_REPLAYED, conversation_id) == before
    assert (await replay(replayed.history, workflows=[RecallReplayedChanged])).replay_failure is not None


async def test_a_history_that_wrote_before_the_search_still_replays(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workflow recorded by a release that wrote the queue before every search replays on this one."""

    async def older_release() -> bool:
        return False  # no marker, and the queue is written first, as before the deferred write

    monkeypatch.setattr(persistence_capability, 'deferral_allowed', older_release)
    older = await run_workflow(
        temporal_env, RecallReplayed.run, f'conv-{uuid.uuid4()}', workflows=[RecallReplayed], max_cached_workflows=0
    )
    names = activity_names(older.history)
    assert names.count('agent__recall_replayed__capability__step_persistence__save_steps') == 8
    assert DEFER_WRITE_PATCH not in patch_markers(older.history)
    monkeypatch.undo()

    assert (await replay(older.history, workflows=[RecallReplayed])).replay_failure is None
