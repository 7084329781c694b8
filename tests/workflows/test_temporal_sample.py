"""The Temporal sample (`workflows/temporal/`), driven against the real dev server.

In process: the worker's own `build_worker` on the test client, and `starter.main(client)`, with
the SQLite store and a continue-as-new every five turns, so the recall in the last turn crosses
workflow runs. As a subprocess: `python -m workflows.temporal.worker --postgres URL`, exactly as
the README runs it, stopped with SIGTERM as `docker stop` stops it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from temporalio.testing import WorkflowEnvironment
from workflows.conversation import DETAIL, STORE_VARIABLE, TURNS
from workflows.temporal import ADDRESS_VARIABLE, TASK_QUEUE, ConversationResult, starter, worker

from durable_recall import PostgresStepStore, SqliteStepStore

from .._services.temporal import unique_task_queue

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The SQLite store the sample's workflow module opens, named by `DURABLE_RECALL_STORE` as in a deployment.

    Module-scoped: the workflow module reads the variable when it is imported (on the host once,
    in the sandbox at every workflow run), so it must stay set while the worker runs.
    """
    assert 'workflows.temporal.workflows' not in sys.modules, 'imported before its store was configured'
    path = tmp_path_factory.mktemp('temporal-sample') / 'sample.db'
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(STORE_VARIABLE, f'sqlite:///{path}')
        yield path


async def test_worker_and_starter_in_process(
    temporal_env: WorkflowEnvironment, sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = temporal_env.client
    conversation_id = f'sample-{uuid.uuid4().hex[:8]}'
    async with worker.build_worker(
        client, task_queue=unique_task_queue('sample'), workflow_failure_exception_types=[Exception]
    ) as running:
        result = await starter.main(
            client, conversation_id=conversation_id, continue_as_new_every=5, task_queue=running.task_queue
        )

    assert [turn.prompt for turn in result.transcript] == list(TURNS)
    assert DETAIL in result.transcript[-1].reply, 'the last turn recalls what compaction dropped turns ago'
    assert DETAIL in capsys.readouterr().out.splitlines()[-2], 'the starter prints the conversation'

    # Two continues-as-new (after turns 5 and 10): the recall crossed workflow runs.
    history = await client.get_workflow_handle(f'conversation-{conversation_id}').fetch_history()
    assert history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
    store = SqliteStepStore(sample_store)
    try:
        assert len(await store.list_runs(conversation_id=conversation_id)) == len(TURNS)
    finally:
        await store.aclose()


async def test_the_starter_waits_for_a_worker_and_says_so(
    temporal_env: WorkflowEnvironment, sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker that comes up while the starter waits: the starter says it waits, then runs the conversation."""
    client = temporal_env.client
    queue = unique_task_queue('late-worker')
    results: list[ConversationResult] = []
    done = anyio.Event()
    said: list[str] = []

    async def start() -> None:
        results.append(await starter.main(client, task_queue=queue, worker_wait=60))
        done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(start)
        with anyio.fail_after(30):
            while not any('no worker is polling' in text for text in said):
                await anyio.sleep(0.2)
                said.append(capsys.readouterr().err)
        async with worker.build_worker(client, task_queue=queue, workflow_failure_exception_types=[Exception]):
            with anyio.fail_after(60):
                await done.wait()
    lines = ''.join([*said, capsys.readouterr().err]).splitlines()
    assert lines[0].startswith(f'starter: no worker is polling task queue {queue!r}'), lines
    assert 'starter: a worker is polling now; starting the conversation' in lines, lines
    assert [turn.prompt for turn in results[0].transcript] == list(TURNS)


async def test_worker_command_with_postgres(temporal_env: WorkflowEnvironment, postgres_database_url: str) -> None:
    address = temporal_env.client.service_client.config.target_host
    env = {
        **os.environ,
        ADDRESS_VARIABLE: address,
        'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)]),
    }
    env.pop(STORE_VARIABLE, None)
    process = subprocess.Popen(
        [sys.executable, '-m', 'workflows.temporal.worker', '--postgres', postgres_database_url],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    conversation_id = f'sample-pg-{uuid.uuid4().hex[:8]}'
    try:
        with anyio.fail_after(60):
            result = await starter.main(temporal_env.client, conversation_id=conversation_id, task_queue=TASK_QUEUE)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert 'PostgresStepStore' in out and out.rstrip().endswith('worker: stopped'), out
    assert DETAIL in result.transcript[-1].reply

    store = PostgresStepStore(postgres_database_url)
    try:
        assert len(await store.list_runs(conversation_id=conversation_id)) == len(TURNS)
    finally:
        await store.aclose()
