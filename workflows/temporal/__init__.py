"""The Temporal sample: a worker that hosts a long, compacted conversation, and a starter that runs one.

Shared by the worker, the workflow and the starter: the task queue, the workflow's name, and the
types that cross the client boundary. The starter imports only this module, so starting a
conversation builds no agent and opens no store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage

TASK_QUEUE = 'durable-recall-conversation'
WORKFLOW_NAME = 'LongConversation'
ADDRESS_VARIABLE = 'TEMPORAL_ADDRESS'
DEFAULT_ADDRESS = 'localhost:7233'


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
