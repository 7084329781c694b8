"""The conversation both samples hold, the scripted model that plays the assistant, and the agent's parts.

The first turn gives a detail (an S3 path). `SlidingWindowCompaction` drops that turn from the
model's context a few turns later, and the last turn asks for the detail back. The scripted model
answers it the way a real model has to: from its context when the detail is still there, and
with `search_conversation_history` when it is not. It never searches because of the prompt's
wording, so a scripted reply that quotes the detail "from our history" proves the detail was out
of view. The same turns drive a real model (`--model provider:name`), with the same agent.

The scripted model needs no network and is deterministic (its reply depends only on the messages),
so the samples and their tests run offline and replay cleanly.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import (
    ConversationSearch,
    DurableRecallError,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    StepPersistence,
    StepStore,
    open_store,
)
from durable_recall.stores import redact_url

STORE_VARIABLE = 'DURABLE_RECALL_STORE'
"""The environment variable naming the store (`open_store` syntax: a SQLite path or a Postgres URL)."""

MODEL_VARIABLE = 'DURABLE_RECALL_SAMPLE_MODEL'
"""The environment variable naming a real model (`provider:name`); unset, the scripted model plays."""

THINK_VARIABLE = 'DURABLE_RECALL_SAMPLE_THINK'
"""Seconds the scripted model takes per reply (default 0): to watch a turn, or stop a worker mid-request."""

AGENT_NAME = 'support'
"""The agent's name: Temporal activity names and DBOS step names derive from it."""

DETAIL = 's3://acme-finance-exports/ledger/2026/ledger-7f3a.parquet'
"""What the first turn gives and the last turn asks back."""

OPENING = f'Hi! Our nightly ACME ledger export writes Parquet files to {DETAIL} every night. Can you help us tune it?'
CLOSING = 'Before I file the change request: what was the exact S3 path of the ledger export I gave you at the start?'

TURNS: tuple[str, ...] = (
    OPENING,
    'What is the difference between Parquet and CSV for analytics?',
    'How does columnar compression work, briefly?',
    'Which compression codec would you pick for Parquet files?',
    'Should we partition the export by month or by day?',
    'What is predicate pushdown?',
    'How large should a Parquet row group be?',
    'Is Avro a better fit than Parquet for streaming?',
    'How do we keep the schema compatible when columns change?',
    'What would be a sensible retention policy for the exports?',
    'Thanks, that covers the format questions.',
    CLOSING,
)
"""The user's side: the detail, ten questions that push it out of the window, the question about it."""

MAX_MESSAGES = 8
"""The context window: compact past eight messages (four exchanges), back down to four."""

INSTRUCTIONS = (
    'You are a concise data-engineering support assistant. Answer in one or two sentences. '
    'Older messages of this conversation may have been dropped from your context. When the user asks '
    'about something that is not in your context, call search_conversation_history and quote what it finds exactly.'
)
"""For a real model: the scripted one behaves this way by construction."""

SEARCH_TOOL = 'search_conversation_history'
SEARCH_QUERY = 'ledger export S3 path'
_S3_PATH = re.compile(r's3://[^\s\'"`<>)\]]*[^\s\'"`<>)\].,;:]')


def store_spec(default: str) -> str:
    """The store `DURABLE_RECALL_STORE` names, or the sample's own `default`."""
    return os.environ.get(STORE_VARIABLE) or default


def open_store_from_env(default: str) -> StepStore:
    """Open the store `DURABLE_RECALL_STORE` names, or the sample's own `default`."""
    return open_store(store_spec(default))


async def check_store(store: StepStore, process: str) -> None:
    """Open `store` now and read from it, or end the process with one line saying why.

    A store opens lazily, so without this a worker pointed at a database that does not exist
    would start, say nothing, and fail each activity (while the starter waits for ever).
    """
    try:
        await store.get_run('durable-recall-startup-check')
    except (DurableRecallError, ImportError, OSError) as error:
        fail(process, f'cannot use the store {store!r}: {error}')


def fail(process: str, message: str) -> NoReturn:
    """End the process with `process: error: <message>` on one line of stderr, exit status 1.

    Any store URL or `password=` in the message is redacted (`redact_url`): the samples print the
    store they could not open, and its URL may carry a password.
    """
    sys.stderr.write(f'{process}: error: {" ".join(redact_url(message).split())}\n')
    sys.stderr.flush()
    raise SystemExit(1)


def check_model(name: str, process: str) -> None:
    """Build the model `name` once, now, or end the process with one line saying what is missing.

    Why at start: the model is built again where it runs (a Temporal activity, a DBOS step), where
    a missing provider package or API key would only show as retries that never end.
    """
    try:
        infer_model(name)
    except ImportError as error:
        fail(
            process,
            f"--model {name} needs its provider's package, which is not installed: {error}."
            " `pip install -e '.[demo]'` brings openai; for another provider install pydantic-ai-slim[<provider>]",
        )
    except UserError as error:  # an unknown provider, or a missing API key
        fail(process, f'--model {name}: {error}')


def configured_model() -> Model | str:
    """The model `DURABLE_RECALL_SAMPLE_MODEL` names, or the scripted model."""
    return os.environ.get(MODEL_VARIABLE) or scripted_model()


def capabilities(store: StepStore) -> list[AbstractCapability[Any]]:
    """The recall stack: persist every step, recall by search, keep a small window in context.

    `preserve_first_user_message=False`: a chat's opening message is not a task every later turn
    needs (the default keeps it at the head for ever), so the window may drop it, and the agent
    recalls it by search.
    """
    return [
        StepPersistence(store=store),
        ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
        SlidingWindowCompaction(max_messages=MAX_MESSAGES, preserve_first_user_message=False),
    ]


def scripted_model() -> FunctionModel:
    """The offline assistant: answers briefly, and searches for what it can no longer see."""
    return FunctionModel(scripted_reply, model_name='scripted')


async def scripted_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One deterministic reply: quote what a search found, answer from context, or search."""
    think = float(os.environ.get(THINK_VARIABLE) or 0)
    if think > 0:
        await asyncio.sleep(think)  # a real model's latency; heartbeats go on meanwhile
    last = messages[-1]
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                found = _S3_PATH.search(str(part.content))
                if found is None:
                    return _text('I searched our conversation but could not find the path; could you paste it again?')
                return _text(
                    f'You gave me {found.group()} at the start. That message had left my context,'
                    ' so I recalled it from our persisted history.'
                )
    prompt = last_prompt(messages)
    if prompt == CLOSING:
        seen = _S3_PATH.search(visible_text(messages[:-1]))
        if seen is not None:
            return _text(f'You gave me {seen.group()}; it is still in my context.')
        if any(tool.name == SEARCH_TOOL for tool in info.function_tools):
            return ModelResponse(parts=[ToolCallPart(SEARCH_TOOL, {'query': SEARCH_QUERY})])
        return _text('That part of our conversation is no longer in my context, so I cannot quote it.')
    return _text(f'Noted. In short, on "{prompt}": it depends on your workload.')


def last_prompt(messages: Sequence[ModelMessage]) -> str:
    """The newest text prompt: core may merge the compaction marker into the request that carries it."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ''


def visible_text(messages: Sequence[ModelMessage]) -> str:
    """Every prompt, reply and tool result in `messages` (what the model is shown), as one text."""
    texts: list[str] = []
    for message in messages:
        for part in message.parts:
            content: object = getattr(part, 'content', None)
            if isinstance(content, str):
                texts.append(content)
            elif content is not None:
                texts.append(str(content))
    return '\n'.join(texts)


def _text(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])
