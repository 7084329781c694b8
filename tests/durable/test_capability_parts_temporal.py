"""Capability parts under `TemporalDurability()`: recorded once through cached and forced replay, recalled.

The enqueued part gets a fresh `record_id` every time workflow code builds it (replay included), so
only a content hash that leaves it out keeps the record to one copy.
"""

from __future__ import annotations

import uuid

import pytest

from .._capability_parts import HAS_CAPABILITY_PARTS, NEEDS_CAPABILITY_PARTS

if not HAS_CAPABILITY_PARTS:
    pytest.skip(NEEDS_CAPABILITY_PARTS, allow_module_level=True)

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import CapabilityPart
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from .._services.temporal import replay, run_workflow
from ._capability_script import LABEL, REPORT, TURNS, capabilities
from ._persistence import row_counts, sqlite_store
from ._recall_script import converse, quoted_search, recall_model

pytestmark = pytest.mark.anyio

STORE = sqlite_store('capability-parts-temporal')
AGENT = Agent(recall_model(), name='capability_parts', capabilities=[*capabilities(STORE), TemporalDurability()])


@workflow.defn(name='durable_recall_tests.CapabilityParts')
class CapabilityParts(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(AGENT, conversation_id, TURNS)


async def test_a_capability_part_is_recorded_once_and_recalled_under_replay(temporal_env: WorkflowEnvironment) -> None:
    cached_id, forced_id = f'conv-{uuid.uuid4()}', f'conv-{uuid.uuid4()}'
    cached = await run_workflow(
        temporal_env, CapabilityParts.run, cached_id, workflows=[CapabilityParts], max_cached_workflows=1000
    )
    forced = await run_workflow(
        temporal_env, CapabilityParts.run, forced_id, workflows=[CapabilityParts], max_cached_workflows=0
    )

    answer = quoted_search(cached.result)
    assert answer.count(LABEL + REPORT) == 1, answer
    assert quoted_search(forced.result).replace(forced_id, cached_id) == answer
    counts = await row_counts(STORE, cached_id)
    assert await row_counts(STORE, forced_id) == counts

    # The run's log holds the part's request once: one report among the first run's messages.
    [first, *_] = await STORE.list_runs(conversation_id=forced_id)
    snapshots = await STORE.list_snapshots(first.run_id)
    reports = {
        part.record_id
        for snapshot in snapshots
        for message in snapshot.messages
        for part in message.parts
        if isinstance(part, CapabilityPart)
    }
    assert len(reports) == 1, 'every snapshot of the run holds the same recorded part'

    assert (await replay(forced.history, workflows=[CapabilityParts])).replay_failure is None
    assert await row_counts(STORE, forced_id) == counts
