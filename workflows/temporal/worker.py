"""Run the chat worker: `python -m workflows.temporal.worker [--postgres URL | --store URL] [--model NAME]`.

Configuration, for a container as much as for a terminal:

- `TEMPORAL_ADDRESS`: the Temporal frontend (default `localhost:7233`, the dev server).
- `DURABLE_RECALL_STORE`: the store, in `open_store` syntax (default: the SQLite file
  `durable-recall-sample-temporal.db` in the working directory). `--store URL` and
  `--postgres URL` set it for this process.
- `DURABLE_RECALL_SAMPLE_MODEL`: a real model (`provider:name`) instead of the scripted one;
  `--model` sets it. The model runs here, so its package and API key belong to the worker, and
  the worker checks both before it serves (one line and exit 1 when one is missing).
- `DURABLE_RECALL_SAMPLE_THINK`: seconds the scripted model takes per reply; `--think` sets it.

The client carries pydantic-ai's `PydanticAIPlugin` (payload conversion, pydantic-ai's sandbox
passthrough, activity registration from `__pydantic_ai_agents__`); the worker adds
`DurableRecallPlugin`, which passes durable-recall through the workflow sandbox.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from typing import Any

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client
from temporalio.worker import Worker

from durable_recall import DurableRecallError
from durable_recall.temporal import DurableRecallPlugin
from workflows.conversation import (
    MODEL_VARIABLE,
    STORE_VARIABLE,
    THINK_VARIABLE,
    check_model,
    check_store,
    fail,
    store_spec,
)
from workflows.temporal import DEFAULT_STORE, STICKY_TIMEOUT, TASK_QUEUE, exit_after, temporal_address


async def connect(address: str | None = None) -> Client:
    """A client for the sample: pydantic-ai's plugin, at `address` or `TEMPORAL_ADDRESS`."""
    return await Client.connect(address or temporal_address(), plugins=[PydanticAIPlugin()])


def build_worker(client: Client, *, task_queue: str = TASK_QUEUE, **worker_options: Any) -> Worker:
    """The worker hosting `SupportChat` and its agent's activities.

    Imports the workflow module here, not at the top, because the module builds the agent and
    opens the store at import, from the variables `main` sets first. A short sticky timeout: a
    workflow task cached on a worker that died moves to any worker after `STICKY_TIMEOUT`.
    """
    from workflows.temporal.workflows import SupportChat

    worker_options.setdefault('sticky_queue_schedule_to_start_timeout', STICKY_TIMEOUT)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[SupportChat],
        plugins=[DurableRecallPlugin()],
        **worker_options,
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Run the durable-recall conversation worker.')
    where = parser.add_mutually_exclusive_group()
    where.add_argument('--store', metavar='URL', help=f'the store (default: ${STORE_VARIABLE} or {DEFAULT_STORE})')
    where.add_argument('--postgres', metavar='URL', help='keep the store in this PostgreSQL database')
    parser.add_argument(
        '--model',
        metavar='PROVIDER:NAME',
        help=f'a real model, e.g. openai:gpt-5 (default: ${MODEL_VARIABLE} or scripted)',
    )
    parser.add_argument('--think', type=float, metavar='SECONDS', help='seconds the scripted model takes per reply')
    parser.add_argument('--task-queue', default=TASK_QUEUE, help=f'the task queue (default {TASK_QUEUE!r})')
    return parser.parse_args(argv)


async def main(argv: Sequence[str] | None = None) -> None:
    """Run the worker until SIGINT (Ctrl-C) or SIGTERM (`docker stop`), then shut it down gracefully."""
    args = parse_args(argv)
    if args.store or args.postgres:
        os.environ[STORE_VARIABLE] = args.store or args.postgres
    if args.model:
        os.environ[MODEL_VARIABLE] = args.model
    if args.think is not None:
        os.environ[THINK_VARIABLE] = str(args.think)
    model = os.environ.get(MODEL_VARIABLE)
    if model:
        check_model(model, 'worker')  # a missing package or key: one line now, not retries in every workflow
    try:
        from workflows.temporal.workflows import store  # builds the agent and the store, from the variables
    except (DurableRecallError, ImportError) as error:
        fail('worker', f'cannot open the store {store_spec(DEFAULT_STORE)!r}: {error}')
    try:
        await check_store(store, 'worker')  # before serving: a bad store fails here, not in every activity
        try:
            client = await connect()
        except RuntimeError as error:  # temporalio's connection failure
            fail('worker', f'cannot reach Temporal at {temporal_address()}: {error}')
        worker = build_worker(client, task_queue=args.task_queue)
    except BaseException:
        await store.aclose()
        raise

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C still raises KeyboardInterrupt
            loop.add_signal_handler(signum, stop.set)
    print(
        f'worker: task queue {args.task_queue!r} on {temporal_address()}, store {store!r},'
        f' model {model or "scripted"}; Ctrl-C to stop',
        flush=True,
    )
    try:
        async with worker:
            await stop.wait()
    finally:
        await store.aclose()
    print('worker: stopped', flush=True)


def run(argv: Sequence[str] | None = None) -> int:
    """Run `main` until stopped; 0 (Ctrl-C before the signal handlers are installed is a stop too)."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(argv))
    return 0


if __name__ == '__main__':
    exit_after(run)  # ends the process without the interpreter's teardown: see `exit_after`
