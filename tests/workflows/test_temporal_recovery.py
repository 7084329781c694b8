"""A worker killed mid-conversation: the conversation recovers within seconds, and the driver says so.

A worker process (`python -m workflows.temporal.worker --postgres URL`, as the README runs it)
that thinks for a minute per reply takes the first model request; a second worker comes up, and
the first is killed while it holds the request (SIGKILL: no shutdown, no goodbye to the server). Its
heartbeats stop, Temporal times the activity out after `HEARTBEAT_TIMEOUT` and gives it to the
second worker, which answers at once (so the retry is visible for half a second only: the driver
looks more often while an activity's heartbeats are late); the driver, in process, says which
activity timed out and then that the conversation recovered, and how long it waited. The second
worker then stops cleanly (SIGTERM).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from workflows.conversation import STORE_VARIABLE, TURNS
from workflows.temporal import ADDRESS_VARIABLE, HEARTBEAT_TIMEOUT, ChatReply, starter, workflow_id

from durable_recall import PostgresStepStore

from .._services.temporal import unique_task_queue

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]
RECOVERED = re.compile(r'recovered: the conversation moved on (\d+\.\d)s after the first sign of trouble')


def start_worker(address: str, store: str, queue: str, think: float) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        ADDRESS_VARIABLE: address,
        'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)]),
    }
    env.pop(STORE_VARIABLE, None)
    command = ['--postgres', store, '--task-queue', queue, '--think', str(think)]
    return subprocess.Popen(
        [sys.executable, '-m', 'workflows.temporal.worker', *command],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def banner(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    with anyio.fail_after(60):
        line = await anyio.to_thread.run_sync(process.stdout.readline)
    assert line.startswith('worker: task queue'), (line, process.stderr.read() if process.stderr else '')
    return line


async def holds_an_activity(handle: WorkflowHandle[object, object]) -> bool:
    try:
        pending = (await handle.describe()).raw_description.pending_activities
    except RPCError:  # not started yet
        return False
    return any(activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED for activity in pending)


async def test_a_killed_worker_is_replaced_within_seconds_and_the_driver_says_so(
    temporal_env: WorkflowEnvironment, postgres_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = temporal_env.client
    address = client.service_client.config.target_host
    queue = unique_task_queue('recovery')
    conversation_id = f'recovery-{uuid.uuid4().hex[:8]}'
    doomed = start_worker(address, postgres_database_url, queue, think=60)
    survivor: subprocess.Popen[str] | None = None
    replies: list[ChatReply] = []
    recovery = float('inf')
    try:
        assert 'PostgresStepStore' in await banner(doomed)
        async with anyio.create_task_group() as group:

            async def converse() -> None:
                results = await starter.main(
                    client, conversation_id=conversation_id, prompts=TURNS[:2], task_queue=queue
                )
                replies.extend(results[conversation_id])

            group.start_soon(converse)
            handle = client.get_workflow_handle(workflow_id(conversation_id))
            with anyio.fail_after(60):  # the first model request, held by the only worker there is
                while not await holds_an_activity(handle):
                    await anyio.sleep(0.2)
            survivor = start_worker(address, postgres_database_url, queue, think=0)
            await banner(survivor)
            doomed.kill()
            killed_at = anyio.current_time()
            with anyio.fail_after(60):
                while not replies:
                    await anyio.sleep(0.05)
            recovery = anyio.current_time() - killed_at
    finally:
        if doomed.poll() is None:
            doomed.kill()
        doomed.communicate(timeout=30)
        if survivor is not None:
            survivor.send_signal(signal.SIGTERM)
    assert survivor is not None
    out, err = survivor.communicate(timeout=30)
    assert survivor.returncode == 0, err
    assert out.rstrip().endswith('worker: stopped'), out

    assert [reply.turn for reply in replies] == [1, 2]
    lines = capsys.readouterr().err.splitlines()
    timed_out = [line for line in lines if 'timed out (heartbeat timeout)' in line]
    assert timed_out and 'agent__support__model_request' in timed_out[0], lines
    assert 'Temporal gave it to another worker (attempt 2)' in timed_out[0]
    (waited,) = [float(match.group(1)) for line in lines if (match := RECOVERED.search(line))]
    assert waited <= recovery
    assert recovery < 10, f'{recovery:.1f}s from the kill to the reply (heartbeat timeout {HEARTBEAT_TIMEOUT})'

    store = PostgresStepStore(postgres_database_url)
    try:
        assert len(await store.list_runs(conversation_id=conversation_id)) == 2, 'no turn lost, none doubled'
    finally:
        await store.aclose()
