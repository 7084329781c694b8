"""What crosses the durable boundary: batches in workflow code, bases for inherited history.

The engine check is replaced by a flag here (the real engines are exercised in tests/durable);
what is under test is the queueing policy, which is engine-neutral.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import InMemoryStepStore, StepPersistence
from durable_recall.base._codec import dump_messages
from durable_recall.stores import PersistBatch, SnapshotDelta
from tests._scripted import read_file, scripted_model

pytestmark = pytest.mark.anyio


class SpyStore(InMemoryStepStore):
    """Counts what reaches the store, delta by delta."""

    def __init__(self) -> None:
        super().__init__()
        self.deltas: list[SnapshotDelta] = []

    async def save_snapshot(self, delta: SnapshotDelta) -> bool:
        self.deltas.append(delta)
        return await super().save_snapshot(delta)

    async def save_snapshots(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        self.deltas.extend(deltas)
        return await super().save_snapshots(deltas)


def agent_with(persistence: StepPersistence, model: FunctionModel | None = None) -> Agent[None, str]:
    agent = Agent(model or scripted_model(), name='support', capabilities=[persistence])
    agent.tool_plain(read_file)
    return agent


class TestWriteThrough:
    async def test_outside_workflows_every_step_is_one_write(self, batches: list[PersistBatch]) -> None:
        await agent_with(StepPersistence(SpyStore())).run('go', conversation_id='c')
        # Registration, then one write per model request (3) and one for the final answer.
        assert [(b.registration is not None, len(b.deltas)) for b in batches] == [
            (True, 0),
            (False, 1),
            (False, 1),
            (False, 1),
            (False, 1),
        ]


class TestBatchedInWorkflowCode:
    async def test_a_run_is_one_write(self, in_workflow: None, batches: list[PersistBatch]) -> None:
        store = SpyStore()
        await agent_with(StepPersistence(store)).run('go', conversation_id='c')
        assert len(batches) == 1
        assert batches[0].registration is not None
        assert [d.index for d in batches[0].deltas] == [0, 1, 2, 3]
        (record,) = await store.list_runs()
        assert len(await store.list_snapshots(record.run_id)) == 4

    async def test_a_full_batch_is_written_early(self, in_workflow: None, batches: list[PersistBatch]) -> None:
        await agent_with(StepPersistence(SpyStore(), max_batch_steps=2)).run('go', conversation_id='c')
        assert [len(b.deltas) for b in batches] == [2, 2]

    async def test_queued_steps_are_written_before_a_search(
        self, in_workflow: None, batches: list[PersistBatch]
    ) -> None:
        store = SpyStore()
        seen_by_search: list[int] = []

        def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': 'x'})])
            return ModelResponse(parts=[TextPart('done')])

        agent = Agent(FunctionModel(reply), capabilities=[StepPersistence(store)])

        @agent.tool_plain
        async def search_conversation_history(query: str) -> str:
            (record,) = await store.list_runs()
            seen_by_search.append(len(await store.list_snapshots(record.run_id)))
            return 'nothing'

        await agent.run('go', conversation_id='c')
        assert seen_by_search == [1]
        assert [len(b.deltas) for b in batches] == [1, 2]

    async def test_a_failed_run_is_written_and_its_error_kept(
        self, in_workflow: None, batches: list[PersistBatch]
    ) -> None:
        store = SpyStore()
        agent = Agent(scripted_model(), capabilities=[StepPersistence(store)])

        @agent.tool_plain
        def read_file(path: str) -> str:
            raise RuntimeError('disk on fire')

        with pytest.raises(RuntimeError, match='disk on fire'):
            await agent.run('go', conversation_id='c')
        assert len(batches) == 1
        (record,) = await store.list_runs()
        snapshots = await store.list_snapshots(record.run_id, include_interrupted=True)
        assert [s.state for s in snapshots] == ['complete', 'interrupted']


class TestInheritedHistory:
    async def test_next_run_names_the_previous_runs_snapshot_instead_of_resending_it(self) -> None:
        store = SpyStore()
        agent = agent_with(StepPersistence(store))
        first = await agent.run('one', conversation_id='c')
        second = await agent.run('two', conversation_id='c', message_history=first.all_messages())

        runs = await store.list_runs()
        first_delta = next(d for d in store.deltas if d.run_id == runs[1].run_id and d.index == 0)
        assert first_delta.base_run_id == runs[0].run_id
        assert first_delta.base_index == 3
        assert len(first_delta.messages) == 1  # only the new prompt crosses the boundary
        snapshots = await store.list_snapshots(runs[1].run_id)
        assert dump_messages(snapshots[-1].messages) == dump_messages(second.all_messages())
        # The run's log still numbers every message it holds, inherited ones included.
        assert len(store._runs[runs[1].run_id].log) == len(second.all_messages())

    async def test_history_built_by_hand_is_sent_whole(self) -> None:
        store = SpyStore()
        agent = agent_with(StepPersistence(store))
        first = await agent_with(StepPersistence(InMemoryStepStore())).run('elsewhere')
        await agent.run('two', conversation_id='c', message_history=first.all_messages())
        assert store.deltas[0].base_run_id is None
        assert len(store.deltas[0].messages) == len(first.all_messages()) + 1
