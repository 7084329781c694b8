"""One worker process of the soak (`benchmarks.soak`): the conversation workflow, its agent, and timings.

Run as `python -m benchmarks._soak_worker TARGET QUEUE STATS READY` with `SOAK_POSTGRES`,
`SOAK_SCHEMA`, `SOAK_SEARCH` (`1`, `0`, or `stub`: a tool of the search's name that answers
without the store) and `SOAK_INDEX` (`1` or `0`: `index_on_save`) in the
environment (the agent is built at import, as a worker's is). Each conversation is one workflow
of K turns; each turn is one `agent.run` with the history so far, under `StepPersistence` (one
`PostgresStepStore` shared by every worker), a sliding window that drops the first turn's
messages by the third, and, with `SOAK_SEARCH=1`, `ConversationSearch(scope='conversation')`:
from the third turn the model first asks the search tool for the token of the first turn, which
compaction dropped.

Every activity this worker runs is timed by an interceptor and written to `STATS` as a JSON line
(its type, milliseconds, the statements it sent to Postgres, the time its write spent indexing,
and the time its catch-up commits waited for their conversation's index lock), counted by
wrapping psycopg's cursor `execute` and the store's functions, per activity through a context
variable. On SIGTERM the worker stops and writes its pool's statistics (waits for a connection).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from pydantic_ai import Agent, FunctionToolset
from pydantic_ai.capabilities import Toolset
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
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
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor, Worker
from temporalio.workflow import ActivityConfig

from durable_recall import (
    ConversationSearch,
    PostgresStepStore,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    StepPersistence,
)
from durable_recall.persistence import _capability as persistence_module
from durable_recall.stores.postgres import _index as postgres_index
from durable_recall.temporal import with_durable_recall_passthrough
from durable_recall.text import SEARCH_TOOL_NAME

MODE = os.environ.get('SOAK_SEARCH', '1')
SEARCH = MODE != '0'
STORE = PostgresStepStore(
    os.environ.get('SOAK_POSTGRES', 'postgresql://postgres@127.0.0.1:5432/test'),
    schema=os.environ.get('SOAK_SCHEMA', 'soak'),
    max_size=int(os.environ.get('SOAK_POOL', '10')),
)


def token(conversation_id: str, turn: int) -> str:
    """The unmistakable word a turn's prompt carries (one term to the analyzer)."""
    return f'zebra{conversation_id.replace("-", "")}t{turn}'


def _turn_of(messages: list[ModelMessage]) -> tuple[str, int, bool]:
    """The current turn's conversation and number (from its prompt), and whether the search has answered."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    _, conversation_id, turn = part.content.split()[:3]
                    searched = any(
                        isinstance(p, ToolReturnPart) for m in messages[messages.index(message) :] for p in m.parts
                    )
                    return conversation_id, int(turn), searched
    raise AssertionError('no prompt')


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    conversation_id, turn, searched = _turn_of(messages)
    if SEARCH and turn >= 3 and not searched:
        return ModelResponse(parts=[ToolCallPart(SEARCH_TOOL_NAME, {'query': token(conversation_id, 1)})])
    return ModelResponse(parts=[TextPart(f'noted turn {turn} of the talk')])


# A release without `index_on_save` (to measure it, `PYTHONPATH=<its src>`) leaves catch-up to the searches.
_persist: dict[str, Any] = {'index_on_save': os.environ.get('SOAK_INDEX', '1') == '1'}
_capabilities: list[Any] = [
    StepPersistence(store=STORE, **_persist if hasattr(StepPersistence, 'index_on_save') else {})
]
if MODE == 'stub':
    # The control: the same tool round trip, answered at once without the store.
    _stub = FunctionToolset[None](id='soak-stub')

    @_stub.tool_plain(name=SEARCH_TOOL_NAME)
    def _stub_search(query: str) -> str:
        return f'stub answer for {query}'

    _capabilities.append(Toolset(_stub))
elif SEARCH:
    _capabilities.append(ConversationSearch(SnapshotHistorySource(STORE), scope='conversation'))
_capabilities += [
    SlidingWindowCompaction(max_messages=4),
    TemporalDurability(activity_config=ActivityConfig(start_to_close_timeout=timedelta(seconds=10))),
]
AGENT = Agent(FunctionModel(_model, model_name='soak'), name='soak', capabilities=_capabilities)


@workflow.defn(name='SoakConversation')
class SoakConversation(PydanticAIWorkflow):
    """One conversation of `turns` turns; returns how many searches found the first turn's token."""

    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, conversation_id: str, turns: int) -> int:
        history: list[ModelMessage] = []
        found = 0
        for turn in range(1, turns + 1):
            prompt = f'turn {conversation_id} {turn} remember {token(conversation_id, turn)}'
            result = await AGENT.run(prompt, message_history=history, conversation_id=conversation_id)
            history = result.all_messages()
            answers = [
                str(part.content)
                for message in result.new_messages()
                for part in message.parts
                if isinstance(part, ToolReturnPart)
            ]
            found += any(token(conversation_id, 1) in answer for answer in answers)
        return found


_current: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar('soak_activity', default=None)


def _count_statements() -> None:
    real = psycopg.AsyncCursor.execute

    async def execute(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        counts = _current.get()
        if counts is not None:
            counts['statements'] += 1
        return await real(cursor, query, *args, **kwargs)

    psycopg.AsyncCursor.execute = execute  # type: ignore[method-assign]

    real_index = getattr(persistence_module, 'index_saved', None)  # a release without index_on_save has none

    async def index_saved(*args: Any, **kwargs: Any) -> None:
        assert real_index is not None
        start = time.perf_counter()
        try:
            await real_index(*args, **kwargs)
        finally:
            counts = _current.get()
            if counts is not None:
                counts['index_ms'] += (time.perf_counter() - start) * 1000

    if real_index is not None:
        persistence_module.index_saved = index_saved

    real_lock = postgres_index.lock_conversation

    async def lock_conversation(*args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            await real_lock(*args, **kwargs)
        finally:
            counts = _current.get()
            if counts is not None:
                counts['lock_ms'] += (time.perf_counter() - start) * 1000

    postgres_index.lock_conversation = lock_conversation


class _Timed(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, stats: Any) -> None:
        super().__init__(next)
        self._stats = stats

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        counts = {'statements': 0.0, 'index_ms': 0.0, 'lock_ms': 0.0}
        reset = _current.set(counts)
        start = time.perf_counter()
        ok = False
        try:
            result = await self.next.execute_activity(input)
            ok = True
            return result
        finally:
            elapsed = (time.perf_counter() - start) * 1000
            _current.reset(reset)
            line = {'type': activity.info().activity_type, 'ms': elapsed, 'ok': ok, 'pid': os.getpid(), **counts}
            self._stats.write(json.dumps(line) + '\n')
            self._stats.flush()


class _Interceptor(Interceptor):
    def __init__(self, stats: Any) -> None:
        self._stats = stats

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Timed(next, self._stats)


async def main(target: str, queue: str, stats_path: str, ready: str) -> None:
    _count_statements()
    client = await Client.connect(target, plugins=[PydanticAIPlugin()])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    with open(stats_path, 'a') as stats:
        worker = Worker(
            client,
            task_queue=queue,
            workflows=[SoakConversation],
            interceptors=[_Interceptor(stats)],
            workflow_runner=with_durable_recall_passthrough(None, ['benchmarks']),
        )
        async with worker:
            Path(ready).write_text(str(os.getpid()))
            await stop.wait()
        state = STORE._db._state  # pyright: ignore[reportPrivateUsage]
        pool = None if state is None else state.owned
        if pool is not None:
            stats.write(json.dumps({'type': 'pool', 'pid': os.getpid(), **pool.get_stats()}) + '\n')
    await STORE.aclose()


if __name__ == '__main__':
    asyncio.run(main(*sys.argv[1:5]))
