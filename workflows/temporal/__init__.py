"""The Temporal sample: a chat workflow per conversation, a worker that hosts it, and a driver that talks to it.

Shared by the worker, the workflow and the driver (`starter.py`): the task queue, the workflow's
name and its update, the timeouts, and the types that cross the client boundary. The driver
imports only this module, so talking to a conversation builds no agent and opens no store.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import NoReturn

from pydantic_ai.messages import ModelMessage

TASK_QUEUE = 'durable-recall-chat'
WORKFLOW_NAME = 'SupportChat'
SEND_UPDATE = 'send'
"""The update that takes one user message and returns the assistant's reply."""
TURNS_QUERY = 'turns'
"""The query answering how many turns the conversation has taken (across continues-as-new)."""
ADDRESS_VARIABLE = 'TEMPORAL_ADDRESS'
DEFAULT_ADDRESS = 'localhost:7233'
DEFAULT_STORE = 'sqlite:///durable-recall-sample-temporal.db'
"""The Temporal sample's own store: a SQLite file in the working directory."""

HEARTBEAT_TIMEOUT = timedelta(seconds=5)
"""Every activity heartbeats in the background while it runs (pydantic-ai's activities do), so a
worker that dies holding one is noticed this long after its last heartbeat, and the activity is
retried on another worker: a crash costs seconds, not the start-to-close timeout."""
MODEL_TIMEOUT = timedelta(seconds=120)
"""Start-to-close for a model request: a real model's long answer, not a lost worker (heartbeats tell those apart)."""
ACTIVITY_TIMEOUT = timedelta(seconds=30)
"""Start-to-close for the store writes and the search."""
STICKY_TIMEOUT = timedelta(seconds=2)
"""A workflow task waits this long on a (lost) worker's sticky queue before any worker may take it."""
HISTORY_BUDGET = 2000
"""Continue-as-new once a run's event history holds this many events (or when Temporal suggests it)."""
IDLE_TIMEOUT = timedelta(minutes=30)
"""A conversation's workflow ends after this long without a message; its result resumes it later."""


def exit_after(run: Callable[[], int]) -> NoReturn:
    """Call `run`, then end the process with its status, skipping the interpreter's teardown.

    `run` is the process's whole work, its event loop closed when it returns; the streams are
    flushed, then `os._exit`.

    Why: Temporal core runs on Tokio threads that temporalio keeps for the life of the process (it
    has no call to stop them). Each client call made from Python is a future those threads
    complete by taking the GIL. A call still in flight as the event loop closes (one cancelled
    with the loop's last tasks) completes a moment later; if the interpreter is finalizing by
    then, CPython ends that foreign thread while pyo3 holds the GIL for it and aborts the process:
    `Fatal Python error: PyGILState_Release` (exit 134; seen under gdb in a Tokio worker thread
    completing a client call during `Py_FinalizeEx`; temporalio/sdk-python#300). It hit the worker
    with a Postgres store in about 1 stop in 30 here, and the starter under load. When `run`
    returns, the worker has shut down, the store's pool is closed (before the loop) and the loop
    is closed: the interpreter's teardown has nothing of ours left to do, so skipping it loses
    nothing. `SystemExit` gives its code (`fail` wrote its line already); any other exception
    prints its traceback and gives 1.
    """
    try:
        status = run()
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def temporal_address() -> str:
    """The Temporal frontend to connect to: `TEMPORAL_ADDRESS`, or the local dev server."""
    return os.environ.get(ADDRESS_VARIABLE) or DEFAULT_ADDRESS


@dataclass
class ChatState:
    """A conversation's state: the workflow's input, what it continues-as-new with, and its result.

    The result is the state to resume from, so a conversation whose workflow ended (idle) carries
    on, window and turn count included, when the driver starts it again with that result.

    Attributes:
        conversation_id: The conversation's id: the search scope, so choose it on the server.
        history: The compacted (so bounded) message history: all a new run needs. Every older
            message is in the store, and the search tool gets it back.
        turns: Turns taken so far.
        history_budget: Continue-as-new past this many history events.
        idle_timeout_seconds: End the workflow after this long without a message.
    """

    conversation_id: str
    history: list[ModelMessage] = field(default_factory=list[ModelMessage])
    turns: int = 0
    history_budget: int = HISTORY_BUDGET
    idle_timeout_seconds: float = IDLE_TIMEOUT.total_seconds()


@dataclass
class ChatReply:
    """What the `send` update returns: the turn's number (from 1) and the assistant's reply."""

    turn: int
    text: str


def workflow_id(conversation_id: str) -> str:
    """The conversation's workflow id: one long-lived workflow per conversation."""
    return f'chat-{conversation_id}'
