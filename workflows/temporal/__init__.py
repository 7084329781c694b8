"""The Temporal sample: a worker that hosts a long, compacted conversation, and a starter that runs one.

Shared by the worker, the workflow and the starter: the task queue, the workflow's name, and the
types that cross the client boundary. The starter imports only this module, so starting a
conversation builds no agent and opens no store.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from pydantic_ai.messages import ModelMessage

TASK_QUEUE = 'durable-recall-conversation'
WORKFLOW_NAME = 'LongConversation'
ADDRESS_VARIABLE = 'TEMPORAL_ADDRESS'
DEFAULT_ADDRESS = 'localhost:7233'


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
class Turn:
    prompt: str
    reply: str


@dataclass
class ConversationInput:
    """What a conversation workflow run needs; also what it continues-as-new with.

    Attributes:
        conversation_id: The conversation's id: the search scope, so choose it on the server.
        turns: The user's prompts, in order.
        model: A model name such as `openai:gpt-5` to use instead of the scripted model; it is
            resolved on the worker, which needs that provider's API key.
        continue_as_new_every: Continue-as-new after this many turns (besides whenever Temporal
            suggests it); `None` only when suggested.
        next_turn: The first turn this run plays (set when continuing as new).
        history: The (compacted, so bounded) message history carried into the next run.
        transcript: The turns played so far, for the starter to print. A convenience of the sample:
            it grows with the conversation, so a long-lived workflow would leave it out (the
            store holds every turn) and carry only `history`, which compaction keeps bounded.
    """

    conversation_id: str
    turns: list[str]
    model: str | None = None
    continue_as_new_every: int | None = None
    next_turn: int = 0
    history: list[ModelMessage] = field(default_factory=list[ModelMessage])
    transcript: list[Turn] = field(default_factory=list[Turn])


@dataclass
class ConversationResult:
    conversation_id: str
    transcript: list[Turn]
