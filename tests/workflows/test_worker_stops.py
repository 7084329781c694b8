"""The sample worker with a Postgres store stops cleanly, every time, with a conversation in flight.

Stopping it used to abort in some stops (`Fatal Python error: PyGILState_Release`, exit 134): a
Temporal client call still in flight as the loop closed was completed by a Tokio thread while the
interpreter finalized (see `workflows.temporal.worker.run`). Each stop here lands at a different
moment of a running conversation, by SIGINT and SIGTERM in turn, and must exit 0 having said
`worker: stopped`. The abort was intermittent (about 1 stop in 20 to 30 on this machine), so a
pass is evidence, not proof; the loop is what the fix was measured with, cut to fit a test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from functools import partial
from pathlib import Path

import anyio
import pytest
from temporalio.testing import WorkflowEnvironment
from workflows.conversation import STORE_VARIABLE, TURNS
from workflows.temporal import ADDRESS_VARIABLE, TASK_QUEUE, starter

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]

STOPS = 6


async def test_the_postgres_worker_exits_0_at_every_stop(
    temporal_env: WorkflowEnvironment, postgres_database_url: str
) -> None:
    client = temporal_env.client
    env = {
        **os.environ,
        ADDRESS_VARIABLE: client.service_client.config.target_host,
        'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)]),
    }
    env.pop(STORE_VARIABLE, None)
    outcomes: list[tuple[int, str]] = []
    finished: list[str] = []

    async def converse(conversation_id: str) -> None:
        await starter.talk(client, conversation_id, list(TURNS) * 12, task_queue=TASK_QUEUE, label=conversation_id)
        finished.append(conversation_id)

    async with anyio.create_task_group() as group:
        for stop in range(STOPS):
            process = subprocess.Popen(
                [sys.executable, '-m', 'workflows.temporal.worker', '--postgres', postgres_database_url],
                cwd=REPO_ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            assert process.stdout is not None
            with anyio.fail_after(30):
                banner = await anyio.to_thread.run_sync(process.stdout.readline)
            assert banner.startswith('worker: task queue'), banner
            if stop == 0:  # the driver asks the workflow how far it got, which needs a worker
                for _ in range(2):
                    group.start_soon(converse, f'stops-{uuid.uuid4().hex[:8]}')
            await anyio.sleep(0.3 + 0.4 * stop)  # a different moment of the conversations each time
            assert len(finished) < 2, f'stop {stop}: no conversation is in flight any more (make them longer)'
            process.send_signal(signal.SIGINT if stop % 2 else signal.SIGTERM)
            out, err = await anyio.to_thread.run_sync(partial(process.communicate, timeout=30))
            outcomes.append((process.returncode, err))
            assert out.rstrip().endswith('worker: stopped'), (stop, out, err)
        group.cancel_scope.cancel()  # the conversations stay on the server, waiting for a worker
    assert [code for code, _ in outcomes] == [0] * STOPS, outcomes
