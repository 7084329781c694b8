"""The conversation both samples hold, the scripted model that plays the assistant, and the agent's parts.

The scripted model needs no network and is deterministic (its reply depends only on the messages),
so the samples and their tests run offline and replay cleanly. Pass a real model instead with
`--model provider:name` (for example `openai:gpt-5`); the turns are plain questions any model can
answer, and the last one needs the search tool, because compaction dropped the first turn long
before.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, NoReturn

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
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

DEFAULT_STORE = 'sqlite:///durable-recall-sample.db'
"""A SQLite file in the working directory."""

DETAIL = 's3://acme-finance-exports/ledger/2026/ledger-7f3a.parquet'
"""What the first turn gives and the last turn asks back."""

TURNS: tuple[str, ...] = (
    f'Please keep this for later: the nightly ACME ledger export goes to {DETAIL}',
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
    'Earlier I gave you the exact S3 path of the ACME ledger export. What was it?',
)

MAX_MESSAGES = 8
"""The context window: four exchanges, so the first turn is long gone by the last."""

_STOP_WORDS = frozenset({'earlier', 'exact', 'gave', 'that', 'this', 'what', 'with', 'your', 'were', 'which'})
_S3_PATH = re.compile(r's3://[^\s\'"\]]+')


def open_store_from_env() -> StepStore:
    """The store `DURABLE_RECALL_STORE` names, or the default SQLite file."""
    return open_store(os.environ.get(STORE_VARIABLE) or DEFAULT_STORE)


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


def capabilities(store: StepStore) -> list[AbstractCapability[Any]]:
    """The recall stack: persist every step, recall by search, keep a small window in context."""
    return [
        StepPersistence(store=store),
        ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
        SlidingWindowCompaction(max_messages=MAX_MESSAGES),
    ]


def scripted_model() -> FunctionModel:
    """The offline assistant: answers briefly, and searches when asked about something said earlier."""
    return FunctionModel(scripted_reply, model_name='scripted')


def scripted_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """One deterministic reply: quote what a search found, start a search, or answer the question."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    for part in last.parts:
        if isinstance(part, ToolReturnPart):
            found = _S3_PATH.search(str(part.content))
            if found is None:
                return ModelResponse(parts=[TextPart('I searched our earlier conversation but found nothing.')])
            return ModelResponse(
                parts=[TextPart(f'The ACME ledger export goes to {found.group()} (from our history).')]
            )
    prompt = _last_prompt(last)
    if 'earlier' in prompt.lower() and any(tool.name == 'search_conversation_history' for tool in info.function_tools):
        query = ' '.join(word for word in re.findall(r'[A-Za-z0-9]{4,}', prompt) if word.lower() not in _STOP_WORDS)
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': query})])
    return ModelResponse(parts=[TextPart(f'Noted. In short, on "{prompt}": it depends on your workload.')])


def _last_prompt(request: ModelRequest) -> str:
    # Core merges a compaction marker with the prompt after it, so take the last text prompt part.
    for part in reversed(request.parts):
        if isinstance(part, UserPromptPart) and isinstance(part.content, str):
            return part.content
    return ''
