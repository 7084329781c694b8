"""`DurableRecallPlugin`: the SPEC example runs in Temporal's default sandbox with no workaround in user code.

The end-to-end tests use a worker configured only with `PydanticAIPlugin()` (carried by the
client) and `DurableRecallPlugin()`, and Temporal's default `SandboxedWorkflowRunner`: not the
suite's runner (`tests/_services/temporal.py`), which passes the `tests` package through. So the
workflow module `_sandbox_workflow.py` is re-executed inside the sandbox as a user's would be, with
`max_cached_workflows=0` re-executing it for every workflow task. Proved:

- the SPEC example (durable-recall imported at top level, the agent built at module level) holds
  the 7-run recall conversation under the plugin, with the search and the writes as activities, and
  a `Replayer` given the same plugins replays it cleanly, writing nothing;
- workflow code sees the worker process's own `durable_recall` module with the plugin, and a
  sandbox re-import without it (the control);
- `passthrough_modules` makes workflow code run the very agent the worker process built;
- the plugin composes with `PydanticAIPlugin` in either order, keeps Temporal's defaults, leaves an
  unsandboxed runner alone, and rejects a bare string for `passthrough_modules`.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any, cast

import pytest
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, ReplayerConfig, UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

import durable_recall
from durable_recall.temporal import DurableRecallPlugin

from .._services.temporal import activity_names, unique_task_queue
from ._persistence import row_counts
from ._recall_script import DETAIL, quoted_search
from ._sandbox_agent import shared_agent
from ._sandbox_workflow import STORE_PATH, SandboxRecall, SandboxRun, SandboxSharedAgent, store


@pytest.fixture(scope='module', autouse=True)
def _remove_store_file() -> Iterator[None]:
    yield
    for suffix in ('', '-wal', '-shm'):
        STORE_PATH.with_name(STORE_PATH.name + suffix).unlink(missing_ok=True)


async def _run(
    client: Client, plugins: list[DurableRecallPlugin], conversation_id: str, turns: int
) -> tuple[SandboxRun, str]:
    async with Worker(
        client,
        task_queue=unique_task_queue('sandbox'),
        workflows=[SandboxRecall],
        plugins=plugins,
        max_cached_workflows=0,
        # Fail the workflow on an error in workflow code (a sandbox violation included) instead of
        # retrying the task until the execution times out.
        workflow_failure_exception_types=[Exception],
    ) as worker:
        handle = await client.start_workflow(
            SandboxRecall.run,
            args=[conversation_id, id(durable_recall), turns],
            id=f'sandbox-{uuid.uuid4()}',
            task_queue=worker.task_queue,
            execution_timeout=timedelta(seconds=60),
        )
        return await handle.result(), handle.id


@pytest.mark.anyio
class TestDefaultSandbox:
    async def test_spec_example_runs_with_the_plugin(self, temporal_env: WorkflowEnvironment) -> None:
        client = temporal_env.client
        assert [type(p) for p in client.config()['plugins']] == [PydanticAIPlugin]
        conversation_id = f'conv-{uuid.uuid4()}'

        run, workflow_id = await _run(client, [DurableRecallPlugin()], conversation_id, turns=7)

        assert run.library_from_host, 'workflow code must see the worker process own durable_recall'
        assert DETAIL in quoted_search(run.outputs), 'run 7 recalls what run 1 saw and compaction dropped'
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        names = activity_names(history)
        assert names.count('agent__sandbox_support__toolset__conversation-search__call_tool') == 1
        # One write per run: run 7's search has no write in front of it (its queue is in view).
        assert names.count('agent__sandbox_support__capability__step_persistence__save_steps') == 7

        # The replayer takes the same plugins, and replaying writes nothing.
        counts = await row_counts(store, conversation_id)
        with ThreadPoolExecutor(thread_name_prefix='sandbox-replayer') as executor:
            replayer = Replayer(
                workflows=[SandboxRecall],
                plugins=[PydanticAIPlugin(), DurableRecallPlugin()],
                workflow_task_executor=executor,
            )
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None
        assert await row_counts(store, conversation_id) == counts

    async def test_without_the_plugin_the_sandbox_reimports_the_library(
        self, temporal_env: WorkflowEnvironment
    ) -> None:
        # The control for `library_from_host`: with pydantic-ai's plugin alone, Temporal re-imports
        # durable_recall (and the store drivers it loads) inside the sandbox of every workflow task.
        run, _ = await _run(temporal_env.client, [], f'conv-{uuid.uuid4()}', turns=1)
        assert run.outputs and not run.library_from_host

    async def test_a_passed_through_agent_module_is_built_once(self, temporal_env: WorkflowEnvironment) -> None:
        client = temporal_env.client
        plugin = DurableRecallPlugin(passthrough_modules=['tests.durable._sandbox_agent'])
        async with Worker(
            client,
            task_queue=unique_task_queue('sandbox-shared'),
            workflows=[SandboxSharedAgent],
            plugins=[plugin],
            max_cached_workflows=0,
            workflow_failure_exception_types=[Exception],
        ) as worker:
            same_agent = await client.execute_workflow(
                SandboxSharedAgent.run,
                args=[f'conv-{uuid.uuid4()}', id(shared_agent)],
                id=f'sandbox-shared-{uuid.uuid4()}',
                task_queue=worker.task_queue,
                execution_timeout=timedelta(seconds=60),
            )
        assert same_agent, 'workflow code must run the agent the worker process built, not a sandbox copy'


def _replayer_config(
    *plugins: PydanticAIPlugin | DurableRecallPlugin, runner: WorkflowRunner | None = None
) -> ReplayerConfig:
    config = ReplayerConfig(workflows=[], workflow_runner=runner or SandboxedWorkflowRunner())
    for plugin in plugins:
        config = plugin.configure_replayer(config)
    return config


def _passthrough(config: ReplayerConfig) -> set[str]:
    runner = config.get('workflow_runner')
    assert isinstance(runner, SandboxedWorkflowRunner)
    return runner.restrictions.passthrough_modules


class TestPluginConfiguration:
    @pytest.mark.parametrize('order', ['pydantic_ai_first', 'durable_recall_first'])
    def test_composes_with_pydantic_ai_in_either_order(self, order: str) -> None:
        plugins = [PydanticAIPlugin(), DurableRecallPlugin()]
        if order == 'durable_recall_first':
            plugins.reverse()
        passthrough = _passthrough(_replayer_config(*plugins))
        assert {'durable_recall', 'pydantic_ai', 'pydantic', 'anyio'} <= passthrough
        assert SandboxedWorkflowRunner().restrictions.passthrough_modules < passthrough, 'defaults are kept'

    def test_extra_modules_pass_through_too(self) -> None:
        passthrough = _passthrough(_replayer_config(DurableRecallPlugin(passthrough_modules=['myapp.agents'])))
        assert {'durable_recall', 'myapp.agents'} <= passthrough

    def test_leaves_an_unsandboxed_runner_alone(self) -> None:
        runner = UnsandboxedWorkflowRunner()
        assert _replayer_config(DurableRecallPlugin(), runner=runner).get('workflow_runner') is runner

    @pytest.mark.parametrize('bad', ['myapp.agents', ['ok', ''], [3]])
    def test_rejects_bad_module_names(self, bad: object) -> None:
        with pytest.raises(TypeError, match='passthrough_modules'):
            DurableRecallPlugin(passthrough_modules=cast(Any, bad))


def test_importing_the_library_loads_no_engine() -> None:
    code = 'import sys, durable_recall; print(sorted(m for m in ("temporalio", "dbos") if m in sys.modules))'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == '[]'


def test_public_names_are_pinned() -> None:
    import durable_recall.temporal

    assert sorted(durable_recall.temporal.__all__) == [
        'ConversationPayloadCodec',
        'ConversationPayloadConverter',
        'DurableRecallPlugin',
        'SANDBOX_PASSTHROUGH_MODULES',
        'TemporalConversationStore',
        'conversation_data_converter',
        'dev_server_path',
        'with_durable_recall_passthrough',
    ]
    assert durable_recall.temporal.SANDBOX_PASSTHROUGH_MODULES == ('durable_recall',)
