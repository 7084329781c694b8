"""StepPersistence on a real `Agent`: what it saves, how it stays idempotent, how it fails."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec._capability_operation import collect_capability_operations
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.tools import RunContext

from durable_recall import InMemoryStepStore, SlidingWindowCompaction, StepPersistence, StepStore
from durable_recall.base._codec import dump_messages
from durable_recall.compaction import has_compaction_marker
from durable_recall.errors import RunIdConflictError
from tests._scripted import read_file, scripted_model
from tests._services.stores import StoreKit

pytestmark = pytest.mark.anyio


@dataclass
class RecordingPersistence(StepPersistence):
    """Records the exact history handed to each save, to compare with what the store reads back.

    `for_run` copies the capability with `dataclasses.replace`, which passes this list along, so
    every run's copy appends to the same one.
    """

    saved: list[tuple[str, list[str]]] = field(default_factory=list[tuple[str, list[str]]], compare=False, repr=False)

    async def _snapshot(self, ctx: RunContext[Any], messages: Any, *, flush: bool = False) -> None:
        before = self._next_index
        await super()._snapshot(ctx, messages, flush=flush)
        if self._next_index != before:
            assert self.persisted_run_id is not None
            self.saved.append((self.persisted_run_id, dump_messages(list(messages))))


def build_agent(persistence: StepPersistence, *, window: int | None = 8) -> Agent[None, str]:
    capabilities: list[Any] = [persistence]
    if window is not None:
        # Listed first on purpose: StepPersistence orders itself outermost whatever the list says.
        capabilities.insert(0, SlidingWindowCompaction(max_messages=window))
    agent = Agent(scripted_model(), name='support', capabilities=capabilities)
    agent.tool_plain(read_file)
    return agent


async def converse(agent: Agent[None, str], turns: int, conversation_id: str = 'conv-1') -> list[ModelMessage]:
    history: list[ModelMessage] | None = None
    for turn in range(turns):
        result = await agent.run(f'turn {turn}', message_history=history, conversation_id=conversation_id)
        history = result.all_messages()
    assert history is not None
    return history


class TestThirtyStepConversation:
    """The foundation's acceptance scenario, on every store."""

    async def test_snapshots_round_trip_exactly(self, store: StepStore) -> None:
        persistence = RecordingPersistence(store)
        history = await converse(build_agent(persistence), turns=10)  # 10 turns x 3 requests = 30 steps

        assert any(has_compaction_marker(m) for m in history), 'the window must have dropped something'
        read_back: list[tuple[str, list[str]]] = []
        for record in await store.list_runs(conversation_id='conv-1'):
            for snapshot in await store.list_snapshots(record.run_id, include_interrupted=True):
                read_back.append((record.run_id, dump_messages(snapshot.messages)))
        assert read_back == persistence.saved
        assert read_back[-1][1] == dump_messages(history)

    async def test_each_message_is_stored_once_per_run(self, kit: StoreKit) -> None:
        persistence = RecordingPersistence(kit.store)
        await converse(build_agent(persistence), turns=10)

        for record in await kit.store.list_runs():
            bodies = {body for run_id, history in persistence.saved if run_id == record.run_id for body in history}
            assert await kit.log_size(record.run_id) == len(bodies)
        memory_log = None
        if isinstance(kit.store, InMemoryStepStore):
            memory_log = [body for run in kit.store._runs.values() for body in run.log]
            assert len(memory_log) == sum(len(set(run.log)) for run in kit.store._runs.values())

    async def test_without_compaction_the_log_grows_by_the_new_messages_only(self) -> None:
        store = InMemoryStepStore()
        history = await converse(build_agent(StepPersistence(store), window=None), turns=3)
        last = (await store.list_runs())[-1]
        assert len(store._runs[last.run_id].log) == len(history)
        snapshots = await store.list_snapshots(last.run_id)
        assert [len(s.messages) for s in snapshots] == [13, 15, 17, 18]


class TestRunRecords:
    async def test_records_carry_conversation_agent_and_metadata(self) -> None:
        store = InMemoryStepStore()
        agent = build_agent(StepPersistence(store, metadata={'tenant': 'acme'}))
        result = await agent.run('hello', conversation_id='conv-9')
        (record,) = await store.list_runs()
        assert record.conversation_id == 'conv-9'
        assert record.agent_name == 'support'
        assert dict(record.metadata) == {'tenant': 'acme'}
        assert record.run_id == result.run_id
        assert record.parent_run_id is None

    async def test_nested_run_records_its_parent(self) -> None:
        store = InMemoryStepStore()
        inner = build_agent(StepPersistence(store), window=None)
        outer = Agent(scripted_model(), name='orchestrator', capabilities=[StepPersistence(store)])

        @outer.tool_plain
        async def read_file(path: str) -> str:
            return (await inner.run(f'read {path}', conversation_id='conv-inner')).output

        await outer.run('delegate', conversation_id='conv-outer')
        (parent,) = await store.list_runs(conversation_id='conv-outer')
        children = await store.list_runs(parent_run_id=parent.run_id)
        assert len(children) == 2
        assert {child.conversation_id for child in children} == {'conv-inner'}

    async def test_explicit_run_id_is_single_shot(self) -> None:
        store = InMemoryStepStore()
        agent = build_agent(StepPersistence(store, run_id='nightly-report'))
        await agent.run('first', conversation_id='c')
        before = await store.list_snapshots('nightly-report')
        with pytest.raises(RunIdConflictError, match="run id 'nightly-report' is already registered"):
            await agent.run('second', conversation_id='c')
        assert await store.list_snapshots('nightly-report') == before


class TestFailures:
    async def test_failed_run_keeps_its_history_marked_interrupted(self) -> None:
        store = InMemoryStepStore()
        agent = Agent(scripted_model(), name='support', capabilities=[StepPersistence(store)])

        @agent.tool_plain
        def read_file(path: str) -> str:
            raise RuntimeError(f'disk on fire while reading {path}')

        with pytest.raises(RuntimeError, match='disk on fire'):
            await agent.run('go', conversation_id='c')
        (record,) = await store.list_runs()
        snapshots = await store.list_snapshots(record.run_id, include_interrupted=True)
        assert [s.state for s in snapshots] == ['complete', 'interrupted']
        # The prompt, the unanswered call, and the partial request core marks `interrupted`.
        assert [m.kind for m in snapshots[-1].messages] == ['request', 'response', 'request']
        assert await store.list_snapshots(record.run_id) == snapshots[:1]

    def test_rejects_a_non_store(self) -> None:
        with pytest.raises(TypeError, match='StepPersistence needs a StepStore, got dict'):
            StepPersistence({})  # type: ignore[arg-type]

    @pytest.mark.parametrize('run_id', ['', 'x' * 201, 42])
    def test_rejects_a_bad_run_id(self, run_id: Any) -> None:
        with pytest.raises(ValueError, match='run_id must be a non-empty string'):
            StepPersistence(InMemoryStepStore(), run_id=run_id)


class TestDurableNames:
    def test_operation_names_are_pinned(self) -> None:
        # Compatibility data: renaming one strands workflows in flight.
        assert sorted(collect_capability_operations(StepPersistence(InMemoryStepStore()))) == ['save_steps']

    async def test_tool_returns_are_folded_into_the_step_snapshot(self) -> None:
        store = InMemoryStepStore()
        await build_agent(StepPersistence(store), window=None).run('go', conversation_id='c')
        (record,) = await store.list_runs()
        snapshots = await store.list_snapshots(record.run_id)
        second = snapshots[1].messages
        assert isinstance(second[-1], ModelRequest)
        assert isinstance(second[-1].parts[0], ToolReturnPart)
