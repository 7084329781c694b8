"""Run the conversation worker: `python -m workflows.temporal.worker [--postgres URL | --store URL]`.

Configuration, for a container as much as for a terminal:

- `TEMPORAL_ADDRESS`: the Temporal frontend (default `localhost:7233`, the dev server).
- `DURABLE_RECALL_STORE`: the store, in `open_store` syntax (default: the SQLite file
  `durable-recall-sample.db` in the working directory). `--store URL` and `--postgres URL` set it
  for this process.

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
from durable_recall.stores import redact_url
from durable_recall.temporal import DurableRecallPlugin
from workflows.conversation import DEFAULT_STORE, STORE_VARIABLE, check_store, fail
from workflows.temporal import TASK_QUEUE, exit_after, temporal_address


async def connect(address: str | None = None) -> Client:
    """A client for the sample: pydantic-ai's plugin, at `address` or `TEMPORAL_ADDRESS`."""
    return await Client.connect(address or temporal_address(), plugins=[PydanticAIPlugin()])


def build_worker(client: Client, *, task_queue: str = TASK_QUEUE, **worker_options: Any) -> Worker:
    """The worker hosting `LongConversation` and its agent's activities.

    Imports the workflow module here, not at the top, because the module builds the agent and
    opens the store at import, from `DURABLE_RECALL_STORE`, which `main` sets first.
    """
    from workflows.temporal.workflows import LongConversation

    return Worker(
        client,
        task_queue=task_queue,
        workflows=[LongConversation],
        plugins=[DurableRecallPlugin()],
        **worker_options,
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Run the durable-recall conversation worker.')
    where = parser.add_mutually_exclusive_group()
    where.add_argument('--store', metavar='URL', help=f'the store (default: ${STORE_VARIABLE} or {DEFAULT_STORE})')
    where.add_argument('--postgres', metavar='URL', help='keep the store in this PostgreSQL database')
    return parser.parse_args(argv)


async def main(argv: Sequence[str] | None = None) -> None:
    """Run the worker until SIGINT (Ctrl-C) or SIGTERM (`docker stop`), then shut it down gracefully."""
    args = parse_args(argv)
    if args.store or args.postgres:
        os.environ[STORE_VARIABLE] = args.store or args.postgres
    try:
        from workflows.temporal.workflows import store  # builds the agent and the store, from the variable
    except (DurableRecallError, ImportError) as error:
        where = redact_url(os.environ.get(STORE_VARIABLE) or DEFAULT_STORE)
        fail('worker', f'cannot open the store {where!r}: {redact_url(str(error))}')
    try:
        await check_store(store, 'worker')  # before serving: a bad store fails here, not in every activity
        try:
            client = await connect()
        except RuntimeError as error:  # temporalio's connection failure
            fail('worker', f'cannot reach Temporal at {temporal_address()}: {error}')
        worker = build_worker(client)
    except BaseException:
        await store.aclose()
        raise

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C still raises KeyboardInterrupt
            loop.add_signal_handler(signum, stop.set)
    print(f'worker: task queue {TASK_QUEUE!r} on {temporal_address()}, store {store!r}; Ctrl-C to stop', flush=True)
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
