"""End-to-end proof that the engine harness works: a plain agent that calls one tool, under Temporal and DBOS.

Durable agents and workflows are defined at module level, so they are built once per session: the
Temporal test workers pass the `tests` package through the sandbox (see `tests/_services/temporal.py`),
and DBOS keeps its registry across `DBOS.destroy()` (see `tests/_services/dbos.py`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.workflow import ActivityConfig, NondeterminismError

from .._services.dbos import DBOSSystemDB, dbos_step_names, launched_dbos, sqlite_system_db
from .._services.temporal import activity_names, make_worker, replay, run_workflow
from ._agent_workflow import AgentTurnsWorkflow, register_agent

pytestmark = pytest.mark.anyio

MODEL_CALLS: list[str] = []
"""One entry (the tool the model was offered) per model request actually made; a replayed step makes none."""

WORKFLOW_AGENT_IDS: list[int] = []
"""Filled by Temporal workflow code: non-empty only if that code ran against this (host) module."""


def smoke_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call `add_one(41)`, then answer with what it returned."""
    MODEL_CALLS.append(info.model_request_parameters.function_tools[0].name)
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    returns = [part.content for part in last.parts if isinstance(part, ToolReturnPart)]
    if returns:
        return ModelResponse(parts=[TextPart(f'the answer is {returns[0]}')])
    return ModelResponse(parts=[ToolCallPart('add_one', {'x': 41})])


def add_one(x: int) -> int:
    return x + 1


ACTIVITY_CONFIG = ActivityConfig(
    start_to_close_timeout=timedelta(seconds=30), retry_policy=RetryPolicy(maximum_attempts=1)
)


def build_temporal_agent(name: str) -> Agent[None, str]:
    return Agent(
        FunctionModel(smoke_reply, model_name='smoke'),
        name=name,
        tools=[add_one],
        capabilities=[TemporalDurability(activity_config=ACTIVITY_CONFIG)],
    )


def build_dbos_agent(name: str) -> Agent[None, str]:
    return Agent(
        FunctionModel(smoke_reply, model_name='smoke'), name=name, tools=[add_one], capabilities=[DBOSDurability()]
    )


_started = time.perf_counter()
temporal_agent = build_temporal_agent('smoke_temporal')
TEMPORAL_BUILD_SECONDS = time.perf_counter() - _started
renamed_temporal_agent = build_temporal_agent('smoke_temporal_renamed')
_started = time.perf_counter()
dbos_agent = build_dbos_agent('smoke_dbos')
DBOS_BUILD_SECONDS = time.perf_counter() - _started


@workflow.defn(name='SmokeWorkflow')
class SmokeWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [temporal_agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        WORKFLOW_AGENT_IDS.append(id(temporal_agent))
        result = await temporal_agent.run(prompt)
        return result.output


# Negative controls: the same workflow type, changed so that its commands no longer match a recorded history.


@workflow.defn(name='SmokeWorkflow')
class SmokeWorkflowRenamedAgent(PydanticAIWorkflow):
    """Runs an agent with another name, so its activities have other types."""

    __pydantic_ai_agents__ = [renamed_temporal_agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await renamed_temporal_agent.run(prompt)
        return result.output


@workflow.defn(name='SmokeWorkflow')
class SmokeWorkflowTimerFirst(PydanticAIWorkflow):
    """Starts a timer before the run, where the history has the first model activity."""

    __pydantic_ai_agents__ = [temporal_agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        await workflow.sleep(timedelta(seconds=1))
        result = await temporal_agent.run(prompt)
        return result.output


@workflow.defn(name='SmokeWorkflowNondeterministic')
class SmokeWorkflowNondeterministic(PydanticAIWorkflow):
    """Takes another path when replaying, as code reading a clock or a random number would."""

    __pydantic_ai_agents__ = [temporal_agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        if workflow.unsafe.is_replaying():
            await workflow.sleep(timedelta(milliseconds=1))
        result = await temporal_agent.run(prompt)
        return result.output


@DBOS.workflow(name='smoke_dbos_workflow')
async def smoke_dbos_workflow(prompt: str) -> str:
    result = await dbos_agent.run(prompt)
    return result.output


def test_durable_agent_build_time(capsys: pytest.CaptureFixture[str]) -> None:
    # The module-level agents above paid the one-off costs; a fresh build shows the steady-state cost.
    started = time.perf_counter()
    build_temporal_agent(f'build_probe_temporal_{uuid.uuid4().hex}')
    temporal_again = time.perf_counter() - started
    started = time.perf_counter()
    build_dbos_agent(f'build_probe_dbos_{uuid.uuid4().hex}')
    dbos_again = time.perf_counter() - started
    with capsys.disabled():
        print(
            f'\ndurable agent build: Temporal first {TEMPORAL_BUILD_SECONDS:.3f}s, again {temporal_again:.3f}s; '
            f'DBOS first {DBOS_BUILD_SECONDS:.3f}s, again {dbos_again:.3f}s'
        )
    assert temporal_again < 5 and dbos_again < 5


@pytest.mark.temporal
async def test_temporal_run_fetch_and_replay(temporal_env: WorkflowEnvironment) -> None:
    MODEL_CALLS.clear()
    WORKFLOW_AGENT_IDS.clear()
    async with make_worker(temporal_env, workflows=[SmokeWorkflow], max_cached_workflows=0) as worker:
        handle = await temporal_env.client.start_workflow(
            SmokeWorkflow.run, 'add one to 41', id=f'smoke-{uuid.uuid4()}', task_queue=worker.task_queue
        )
        assert await handle.result() == 'the answer is 42'
    history = await handle.fetch_history()
    assert history.workflow_id == handle.id

    assert activity_names(history) == [
        'agent__smoke_temporal__model_request',
        'agent__smoke_temporal__toolset__<agent>__call_tool',
        'agent__smoke_temporal__model_request',
    ]
    assert MODEL_CALLS == ['add_one', 'add_one']
    # The workflow ran against this module's own agent: the sandbox did not re-import the module.
    assert set(WORKFLOW_AGENT_IDS) == {id(temporal_agent)}

    result = await replay(history, workflows=[SmokeWorkflow])
    assert result.replay_failure is None
    assert MODEL_CALLS == ['add_one', 'add_one'], 'replay must not call the model'

    for changed in (SmokeWorkflowRenamedAgent, SmokeWorkflowTimerFirst):
        result = await replay(history, workflows=[changed])
        assert isinstance(result.replay_failure, NondeterminismError), (changed, result.replay_failure)


@pytest.mark.temporal
async def test_temporal_nondeterminism_fails_the_run(temporal_env: WorkflowEnvironment) -> None:
    # With no workflow cache every workflow task replays the history, so a workflow that diverges on
    # replay fails during the run, and fails fast (not retried until the execution timeout).
    started = time.perf_counter()
    with pytest.raises(WorkflowFailureError) as failure:
        await run_workflow(
            temporal_env,
            SmokeWorkflowNondeterministic.run,
            'add one to 41',
            workflows=[SmokeWorkflowNondeterministic],
            max_cached_workflows=0,
        )
    assert 'Nondeterminism' in repr(failure.value.cause), failure.value.cause
    assert time.perf_counter() - started < 30


@pytest.fixture(scope='session')
def session_temporal_agent() -> Agent[None, str]:
    return register_agent(build_temporal_agent('smoke_temporal_session'))


@pytest.mark.temporal
async def test_temporal_agent_from_session_fixture(
    temporal_env: WorkflowEnvironment, session_temporal_agent: Agent[None, str]
) -> None:
    MODEL_CALLS.clear()
    run = await run_workflow(
        temporal_env,
        AgentTurnsWorkflow.run,
        session_temporal_agent.name,
        ['first turn', 'second turn'],
        workflows=[AgentTurnsWorkflow],
        agents=[session_temporal_agent],
        max_cached_workflows=0,
    )
    assert run.result == ['the answer is 42', 'the answer is 42']
    assert MODEL_CALLS == ['add_one'] * 4
    prefix = 'agent__smoke_temporal_session'
    turn = [f'{prefix}__model_request', f'{prefix}__toolset__<agent>__call_tool', f'{prefix}__model_request']
    assert activity_names(run.history) == turn * 2
    assert (await replay(run.history, workflows=[AgentTurnsWorkflow])).replay_failure is None


@pytest.mark.dbos
async def test_dbos_run_and_steps(dbos: DBOS, dbos_system_db: DBOSSystemDB) -> None:
    MODEL_CALLS.clear()
    workflow_id = f'smoke-{dbos_system_db.kind}-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        assert await smoke_dbos_workflow('add one to 41') == 'the answer is 42'

    assert await dbos_step_names(workflow_id) == ['smoke_dbos__model.request', 'smoke_dbos__model.request']
    assert MODEL_CALLS == ['add_one', 'add_one']
    status = await DBOS.get_workflow_status_async(workflow_id)
    assert status is not None and status.status == 'SUCCESS'

    # Starting the same workflow ID again returns the recorded result without running anything.
    with SetWorkflowID(workflow_id):
        assert await smoke_dbos_workflow('add one to 41') == 'the answer is 42'
    assert MODEL_CALLS == ['add_one', 'add_one']


@pytest.mark.dbos
async def test_event_loop_outlives_dbos(tmp_path: Path) -> None:
    async with launched_dbos(sqlite_system_db(tmp_path)):
        await DBOS.list_workflows_async()  # DBOS makes its executor this loop's default executor here
    # ... and shuts it down on destroy; the fixture must have left the loop a working one.
    assert await asyncio.to_thread(lambda: 42) == 42
