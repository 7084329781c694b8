"""StepPersistence under `TemporalDurability()` on the real dev server.

The agents and workflows are module-level, so they are built once per session; the test workers
pass the `tests` package through the sandbox (see `tests/_services/temporal.py`).
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import (
    PydanticAIWorkflow,
    TemporalAgent,  # pyright: ignore[reportDeprecated]
    TemporalDurability,
)
from pydantic_ai.messages import ModelMessage
from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from durable_recall import SlidingWindowCompaction, StepPersistence
from tests._scripted import read_file, scripted_model

from .._services.temporal import activity_names, replay, run_workflow
from ._persistence import prompts, row_counts, sqlite_store

pytestmark = pytest.mark.anyio

STORE = sqlite_store('temporal')


def _agent(name: str, *, persist: bool) -> Agent[None, str]:
    capabilities: list[Any] = [SlidingWindowCompaction(max_messages=8), TemporalDurability()]
    if persist:
        capabilities.insert(0, StepPersistence(STORE))
    agent = Agent(scripted_model(), name=name, capabilities=capabilities)
    agent.tool_plain(read_file)
    return agent


PERSISTED = _agent('recall', persist=True)
PLAIN = _agent('plain', persist=False)


async def _converse(agent: Agent[None, str], conversation_id: str, turns: list[str]) -> list[str]:
    history: list[ModelMessage] | None = None
    outputs: list[str] = []
    for prompt in turns:
        result = await agent.run(prompt, message_history=history, conversation_id=conversation_id)
        history = result.all_messages()
        outputs.append(result.output)
    return outputs


@workflow.defn(name='durable_recall_tests.PersistedConversation')
class PersistedConversation(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [PERSISTED]

    @workflow.run
    async def run(self, conversation_id: str, turns: list[str]) -> list[str]:
        return await _converse(PERSISTED, conversation_id, turns)


@workflow.defn(name='durable_recall_tests.PersistedConversation')
class ChangedConversation(PydanticAIWorkflow):
    """The same workflow name with one more turn: its history must not replay."""

    __pydantic_ai_agents__ = [PERSISTED]

    @workflow.run
    async def run(self, conversation_id: str, turns: list[str]) -> list[str]:
        return await _converse(PERSISTED, conversation_id, [*turns, 'one more'])


@workflow.defn(name='durable_recall_tests.PlainConversation')
class PlainConversation(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [PLAIN]

    @workflow.run
    async def run(self, conversation_id: str, turns: list[str]) -> list[str]:
        return await _converse(PLAIN, conversation_id, turns)


def history_bytes(run: Any) -> int:
    """Bytes of the workflow's event history as Temporal stores it (protobuf)."""
    return sum(event.ByteSize() for event in run.history.events)


class TestTemporalPersistence:
    async def test_writes_are_activities_with_pinned_names(self, temporal_env: WorkflowEnvironment) -> None:
        run = await run_workflow(
            temporal_env,
            PersistedConversation.run,
            f'conv-{uuid.uuid4()}',
            prompts(2),
            workflows=[PersistedConversation],
        )
        persistence = [name for name in activity_names(run.history) if 'step_persistence' in name]
        # Compatibility data: one batched write per run, under this exact activity name.
        assert persistence == ['agent__recall__capability__step_persistence__save_steps'] * 2

    async def test_replay_writes_nothing_twice(self, temporal_env: WorkflowEnvironment) -> None:
        cached_conversation, replayed_conversation = f'conv-{uuid.uuid4()}', f'conv-{uuid.uuid4()}'
        cached = await run_workflow(
            temporal_env,
            PersistedConversation.run,
            cached_conversation,
            prompts(5),
            workflows=[PersistedConversation],
            max_cached_workflows=1000,
        )
        forced = await run_workflow(
            temporal_env,
            PersistedConversation.run,
            replayed_conversation,
            prompts(5),
            workflows=[PersistedConversation],
            max_cached_workflows=0,
        )
        assert forced.result == cached.result
        expected = await row_counts(STORE, cached_conversation)
        assert expected.runs == 5
        assert expected.snapshots == 5 * 4  # three model requests and the final answer per turn
        assert await row_counts(STORE, replayed_conversation) == expected

        result = await replay(forced.history, workflows=[PersistedConversation])
        assert result.replay_failure is None
        assert await row_counts(STORE, replayed_conversation) == expected

        changed = await replay(forced.history, workflows=[ChangedConversation])
        assert changed.replay_failure is not None, 'the negative control must fail to replay'

    async def test_history_grows_with_the_conversation_not_its_square(
        self, temporal_env: WorkflowEnvironment, capsys: pytest.CaptureFixture[str]
    ) -> None:
        turns = prompts(20)
        persisted = await run_workflow(
            temporal_env,
            PersistedConversation.run,
            f'conv-{uuid.uuid4()}',
            turns,
            workflows=[PersistedConversation],
            max_cached_workflows=1000,
        )
        plain = await run_workflow(
            temporal_env,
            PlainConversation.run,
            f'conv-{uuid.uuid4()}',
            turns,
            workflows=[PlainConversation],
            max_cached_workflows=1000,
        )
        ratio = history_bytes(persisted) / history_bytes(plain)
        with capsys.disabled():
            print(
                f'\n20-turn history: {history_bytes(persisted)} bytes with persistence, '
                f'{history_bytes(plain)} without (x{ratio:.2f})'
            )
        assert ratio <= 1.5


def _deprecated_wrapper() -> Any:
    agent = Agent(scripted_model(), name='wrapped', capabilities=[StepPersistence(STORE)])
    agent.tool_plain(read_file)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the wrapper's deprecation is what this test is about
        return TemporalAgent(agent)  # pyright: ignore[reportDeprecated]


WRAPPED = _deprecated_wrapper()


@workflow.defn(name='durable_recall_tests.WrappedConversation')
class WrappedConversation:
    __pydantic_ai_agents__ = [WRAPPED]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        return (await WRAPPED.run('hello', conversation_id=conversation_id)).output


class TestDeprecatedWrapper:
    async def test_refuses_store_io_in_workflow_code(self, temporal_env: WorkflowEnvironment) -> None:
        with pytest.raises(WorkflowFailureError) as failure:
            await run_workflow(
                temporal_env, WrappedConversation.run, f'conv-{uuid.uuid4()}', workflows=[WrappedConversation]
            )
        cause = failure.value.cause
        assert cause is not None
        assert 'TemporalDurability()' in str(cause)
        assert 'inline in Temporal workflow code' in str(cause)
