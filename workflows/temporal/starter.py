"""Talk to support chats as a chat app would: `python -m workflows.temporal.starter [--conversations N]`.

Each conversation is one long-lived `SupportChat` workflow (id `chat-<conversation id>`). The
driver starts it (or finds it running), then sends the sample's turns one at a time as `send`
updates, printing each reply as it comes back, exactly as a chat backend would forward a user's
messages. `--conversations N` holds N conversations at once.

Needs a running worker (`python -m workflows.temporal.worker`) on the same Temporal server
(`TEMPORAL_ADDRESS`, default `localhost:7233`). Without one the driver says so on stderr and waits
`--worker-wait` seconds (default 30) for one, then exits 1 having started nothing. While a
conversation runs, a task no worker picks up, an activity that a lost worker held, or an activity
that keeps failing is said on stderr too, and so is the recovery (see `watch.py`).

Reusing a conversation id resumes that conversation's script: the turns it has already taken are
not sent again, and the rest continue with the conversation's window (also after its workflow
ended idle: its result is the state the new run starts from).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import replace

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from workflows.conversation import TURNS, fail
from workflows.temporal import (
    HISTORY_BUDGET,
    IDLE_TIMEOUT,
    SEND_UPDATE,
    TASK_QUEUE,
    TURNS_QUERY,
    WORKFLOW_NAME,
    ChatReply,
    ChatState,
    exit_after,
    temporal_address,
    workflow_id,
)
from workflows.temporal.watch import NoWorkerError, Watch, say, wait_for_worker

WORKER_WAIT = 30.0
"""Seconds the driver waits for a worker to poll the task queue before it gives up."""

STALLED_AFTER = 10.0
"""Seconds a task of a running conversation may wait for a worker before the driver says so."""


async def talk(
    client: Client,
    conversation_id: str,
    prompts: Sequence[str] = TURNS,
    *,
    task_queue: str = TASK_QUEUE,
    history_budget: int = HISTORY_BUDGET,
    idle_timeout: float = IDLE_TIMEOUT.total_seconds(),
    stalled_after: float = STALLED_AFTER,
    label: str = '',
) -> list[ChatReply]:
    """Hold one conversation: start or find its workflow, send the prompts it has not had, print the replies."""
    workflow = workflow_id(conversation_id)
    state = ChatState(conversation_id, history_budget=history_budget, idle_timeout_seconds=idle_timeout)
    previous = await _ended_state(client, workflow)
    if previous is not None:  # ended idle: the new run carries on from its result
        state = replace(previous, history_budget=history_budget, idle_timeout_seconds=idle_timeout)
    await client.start_workflow(
        WORKFLOW_NAME,
        state,
        id=workflow,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    )
    handle = client.get_workflow_handle(workflow)  # no run id: follows continues-as-new
    taken = await handle.query(TURNS_QUERY, result_type=int)
    if taken >= len(prompts):
        say(f'conversation {conversation_id} has taken all {taken} turns of the script: nothing left to send', label)
        return []
    if taken:
        say(f'conversation {conversation_id} has taken {taken} turns already; continuing at turn {taken + 1}', label)
    prefix = f'[{label}] ' if label else ''
    if not label:
        print(f'conversation {conversation_id}:\n', flush=True)
    watch = Watch(handle, task_queue, stalled_after, label)
    watching = asyncio.create_task(watch.run())
    replies: list[ChatReply] = []
    try:
        for number, prompt in enumerate(prompts[taken:], start=taken + 1):
            reply = await _send(handle, number, prompt)
            watch.progress()
            replies.append(reply)
            print(f'{prefix}user:      {prompt}\n{prefix}assistant: {reply.text}\n', flush=True)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    return replies


async def _send(handle: WorkflowHandle[object, object], number: int, prompt: str) -> ChatReply:
    """Send turn `number` and wait for its reply, however long the workers are away.

    The update id makes a resent turn join the one in flight: after the wait for the reply timed
    out (no worker for a long while), and when a driver restarted mid-turn sends it again.
    """
    while True:
        try:
            reply: ChatReply = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                SEND_UPDATE, prompt, id=f'turn-{number}', result_type=ChatReply
            )
            return reply
        except WorkflowUpdateRPCTimeoutOrCancelledError as error:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError from error  # we were cancelled: not a timeout to wait out


async def main(
    client: Client | None = None,
    *,
    conversations: int = 1,
    conversation_id: str | None = None,
    prompts: Sequence[str] = TURNS,
    task_queue: str = TASK_QUEUE,
    worker_wait: float = WORKER_WAIT,
    history_budget: int = HISTORY_BUDGET,
    idle_timeout: float = IDLE_TIMEOUT.total_seconds(),
    stalled_after: float = STALLED_AFTER,
) -> dict[str, list[ChatReply]]:
    """Hold `conversations` conversations at once; return each one's replies by conversation id.

    Raises:
        NoWorkerError: No worker polled `task_queue` within `worker_wait` seconds (nothing started).
    """
    if client is None:
        client = await Client.connect(temporal_address(), plugins=[PydanticAIPlugin()])
    address = client.service_client.config.target_host
    await wait_for_worker(client, task_queue, address, timeout=worker_wait)
    base = conversation_id or f'sample-{uuid.uuid4().hex[:12]}'
    ids = [base] if conversations == 1 else [f'{base}-{index}' for index in range(1, conversations + 1)]
    many = len(ids) > 1
    results = await asyncio.gather(
        *(
            talk(
                client,
                each,
                prompts,
                task_queue=task_queue,
                history_budget=history_budget,
                idle_timeout=idle_timeout,
                stalled_after=stalled_after,
                label=each if many else '',
            )
            for each in ids
        )
    )
    return dict(zip(ids, results, strict=True))


async def _ended_state(client: Client, workflow: str) -> ChatState | None:
    """The state a conversation's completed workflow returned, or `None` (running, or never started)."""
    handle = client.get_workflow_handle(workflow, result_type=ChatState)
    try:
        status = (await handle.describe()).status
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    if status != WorkflowExecutionStatus.COMPLETED:
        return None
    return await handle.result()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Hold durable-recall sample conversations as a chat app would.')
    parser.add_argument('--conversations', type=int, default=1, metavar='N', help='conversations at once (default 1)')
    parser.add_argument(
        '--conversation-id', help='the conversation id (default: a new one); with N conversations, ID-1 ... ID-N'
    )
    parser.add_argument('--task-queue', default=TASK_QUEUE, help=f'the task queue (default {TASK_QUEUE!r})')
    parser.add_argument(
        '--history-budget',
        type=int,
        default=HISTORY_BUDGET,
        metavar='EVENTS',
        help=f'continue-as-new past this many history events (default {HISTORY_BUDGET})',
    )
    parser.add_argument(
        '--worker-wait',
        type=float,
        default=WORKER_WAIT,
        metavar='SECONDS',
        help=f'how long to wait for a worker before giving up (default {WORKER_WAIT:g})',
    )
    parser.add_argument('--model', help=argparse.SUPPRESS)  # to say where it belongs
    arguments = parser.parse_args(argv)
    if arguments.model is not None:
        parser.error(
            'the model runs on the worker: start it with'
            f' `python -m workflows.temporal.worker --model {arguments.model}`'
            " (the worker's environment holds the provider's package and API key)"
        )
    if arguments.conversations < 1:
        parser.error(f'--conversations must be at least 1, got {arguments.conversations}')
    return arguments


def run(argv: Sequence[str] | None = None) -> int:
    """Hold the conversations from the command line; 0, or the error in one line (exit 1, or 130 on Ctrl-C)."""
    arguments = parse_args(argv)
    try:
        asyncio.run(
            main(
                conversations=arguments.conversations,
                conversation_id=arguments.conversation_id,
                task_queue=arguments.task_queue,
                worker_wait=arguments.worker_wait,
                history_budget=arguments.history_budget,
            )
        )
    except NoWorkerError as error:
        fail('starter', str(error))
    except WorkflowUpdateFailedError as error:
        fail('starter', f'a turn failed: {error.cause or error}')
    except RuntimeError as error:  # temporalio's connection failure
        if 'connect' not in str(error).lower():
            raise
        fail('starter', f'cannot reach Temporal at {temporal_address()}: {error}')
    except KeyboardInterrupt:
        say('interrupted; the conversations keep their place on the server (run again with the same id to go on)')
        return 130
    return 0


if __name__ == '__main__':
    exit_after(run)  # ends the process without the interpreter's teardown: see `exit_after`
