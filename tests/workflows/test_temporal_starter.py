"""The sample starter says when no worker is there, instead of waiting silently (on the real dev server).

Without a worker polling its task queue, a workflow waits on the server for ever, and a starter
awaiting its result looks hung. The starter asks the server for the queue's pollers first: with
none, it says so on one stderr line, waits `--worker-wait` seconds, and exits 1 having started
nothing. Once the conversation runs, a task no worker picks up is said too (the `Watch`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment
from workflows.temporal import ADDRESS_VARIABLE, workflow_id
from workflows.temporal.watch import live_pollers

from .._services.temporal import unique_task_queue

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]


async def _never_started(client: Client, conversation_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id(conversation_id)).describe()
    except RPCError as error:
        return error.status == RPCStatusCode.NOT_FOUND
    return False


async def test_without_a_worker_the_starter_says_so_and_exits_1(temporal_env: WorkflowEnvironment) -> None:
    client = temporal_env.client
    queue = unique_task_queue('no-worker')
    conversation_id = f'nobody-{uuid.uuid4().hex[:8]}'
    assert await live_pollers(client, queue) == 0
    env = {
        **os.environ,
        ADDRESS_VARIABLE: client.service_client.config.target_host,
        'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)]),
    }
    command = ['--task-queue', queue, '--worker-wait', '2', '--conversation-id', conversation_id]
    done = subprocess.run(
        [sys.executable, '-m', 'workflows.temporal.starter', *command],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == '' and 'Traceback' not in done.stderr
    waiting, error = done.stderr.strip().splitlines()
    assert waiting.startswith(f'starter: no worker is polling task queue {queue!r} on ')
    assert 'python -m workflows.temporal.worker' in waiting and 'Waiting up to 2s' in waiting
    assert error.startswith(f'starter: error: no worker polled task queue {queue!r}')
    assert 'within 2s' in error and 'run the starter again' in error
    assert await _never_started(client, conversation_id), 'a starter that gave up must leave no workflow behind'


def test_a_model_given_to_the_starter_is_pointed_to_the_worker() -> None:
    """The model runs on the worker (its package and key live there): the starter says so instead of ignoring it."""
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)])}
    done = subprocess.run(
        [sys.executable, '-m', 'workflows.temporal.starter', '--model', 'openai:gpt-5'],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert 'the model runs on the worker: start it with `python -m workflows.temporal.worker --model openai:gpt-5`' in (
        done.stderr
    )
