"""Start one conversation and print it: `python -m workflows.temporal.starter [--model provider:name]`.

Needs a running worker (`python -m workflows.temporal.worker`) on the same Temporal server
(`TEMPORAL_ADDRESS`, default `localhost:7233`). Without one the starter says so on stderr and
waits `--worker-wait` seconds (default 30) for one, then exits 1 having started nothing. While the
conversation runs, a task no worker picks up or an activity that keeps failing is said on stderr
too (see `watch.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import uuid
from collections.abc import Sequence

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client

from workflows.conversation import TURNS, fail
from workflows.temporal import (
    TASK_QUEUE,
    WORKFLOW_NAME,
    ConversationInput,
    ConversationResult,
    exit_after,
    temporal_address,
)
from workflows.temporal.watch import NoWorkerError, Watch, say, wait_for_worker

WORKER_WAIT = 30.0
"""Seconds the starter waits for a worker to poll the task queue before it gives up."""

STALLED_AFTER = 10.0
"""Seconds a task of the running conversation may wait for a worker before the starter says so."""


async def main(
    client: Client | None = None,
    *,
    conversation_id: str | None = None,
    model: str | None = None,
    continue_as_new_every: int | None = None,
    task_queue: str = TASK_QUEUE,
    worker_wait: float = WORKER_WAIT,
    stalled_after: float = STALLED_AFTER,
) -> ConversationResult:
    """Run the sample conversation to the end, print it, and return it.

    Raises:
        NoWorkerError: No worker polled `task_queue` within `worker_wait` seconds (nothing started).
    """
    if client is None:
        client = await Client.connect(temporal_address(), plugins=[PydanticAIPlugin()])
    address = client.service_client.config.target_host
    await wait_for_worker(client, task_queue, address, timeout=worker_wait)
    conversation_id = conversation_id or f'sample-{uuid.uuid4().hex[:12]}'
    workflow_id = f'conversation-{conversation_id}'
    handle = await client.start_workflow(
        WORKFLOW_NAME,
        ConversationInput(
            conversation_id=conversation_id,
            turns=list(TURNS),
            model=model,
            continue_as_new_every=continue_as_new_every,
        ),
        id=workflow_id,
        task_queue=task_queue,
        result_type=ConversationResult,
    )
    watch = asyncio.create_task(Watch(client.get_workflow_handle(workflow_id), task_queue, stalled_after).run())
    try:
        result = await handle.result()
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
    print(f'conversation {result.conversation_id}:\n')
    for turn in result.transcript:
        print(f'user:      {turn.prompt}\nassistant: {turn.reply}\n')
    return result


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Start the durable-recall sample conversation.')
    parser.add_argument('--model', metavar='PROVIDER:NAME', help='a real model, e.g. openai:gpt-5 (default: scripted)')
    parser.add_argument('--conversation-id', help='the conversation id (default: a new one)')
    parser.add_argument(
        '--continue-as-new-every', type=int, metavar='N', help='continue the workflow as new every N turns'
    )
    parser.add_argument('--task-queue', default=TASK_QUEUE, help=f'the task queue (default {TASK_QUEUE!r})')
    parser.add_argument(
        '--worker-wait',
        type=float,
        default=WORKER_WAIT,
        metavar='SECONDS',
        help=f'how long to wait for a worker before giving up (default {WORKER_WAIT:g})',
    )
    return parser.parse_args(argv)


def run(argv: Sequence[str] | None = None) -> int:
    """Run one conversation from the command line; 0, or the error in one line (exit 1, or 130 on Ctrl-C)."""
    arguments = parse_args(argv)
    try:
        asyncio.run(
            main(
                conversation_id=arguments.conversation_id,
                model=arguments.model,
                continue_as_new_every=arguments.continue_as_new_every,
                task_queue=arguments.task_queue,
                worker_wait=arguments.worker_wait,
            )
        )
    except NoWorkerError as error:
        fail('starter', str(error))
    except RuntimeError as error:  # temporalio's connection failure
        if 'connect' not in str(error).lower():
            raise
        fail('starter', f'cannot reach Temporal at {temporal_address()}: {error}')
    except KeyboardInterrupt:
        say('interrupted; a conversation already started keeps its place on the server')
        return 130
    return 0


if __name__ == '__main__':
    exit_after(run)  # ends the process without the interpreter's teardown: see `exit_after`
