"""`save_steps` writes its whole batch through one `save_snapshots` call: one store transaction."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic_ai import Agent

from durable_recall import InMemoryStepStore, StepPersistence
from durable_recall.stores import PersistBatch, SnapshotDelta
from tests._scripted import read_file, scripted_model
from tests._services.stores import StoreKit

pytestmark = pytest.mark.anyio


class CallSpy(InMemoryStepStore):
    """Records each store write call and the deltas it carried."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, int]] = []

    async def save_snapshot(self, delta: SnapshotDelta) -> bool:
        self.calls.append(('save_snapshot', 1))
        return await super().save_snapshot(delta)

    async def save_snapshots(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        self.calls.append(('save_snapshots', len(deltas)))
        return await super().save_snapshots(deltas)


def agent_with(persistence: StepPersistence) -> Agent[None, str]:
    agent = Agent(scripted_model(), name='support', capabilities=[persistence])
    agent.tool_plain(read_file)
    return agent


async def test_in_workflow_code_a_run_is_one_store_call(in_workflow: None) -> None:
    store = CallSpy()
    await agent_with(StepPersistence(store)).run('go', conversation_id='c')
    assert store.calls == [('save_snapshots', 4)]


async def test_outside_workflows_each_step_is_one_store_call() -> None:
    store = CallSpy()
    await agent_with(StepPersistence(store)).run('go', conversation_id='c')
    # Registration writes no delta, so it makes no snapshot call.
    assert store.calls == [('save_snapshots', 1)] * 4


async def test_a_replayed_batch_writes_nothing(kit: StoreKit, in_workflow: None, batches: list[PersistBatch]) -> None:
    await agent_with(StepPersistence(kit.store)).run('go', conversation_id='c')
    [batch] = batches
    (record,) = await kit.store.list_runs()
    before = await kit.store.list_snapshots(record.run_id, include_interrupted=True)
    size = await kit.log_size(record.run_id)

    assert await kit.store.save_snapshots(batch.deltas) == [False] * len(batch.deltas) == [False] * 4

    assert await kit.store.list_snapshots(record.run_id, include_interrupted=True) == before
    assert await kit.log_size(record.run_id) == size
