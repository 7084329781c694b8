"""A single-run tool loop whose history core compacts (pydantic-ai 2.78+), for the durable engines' tests.

The compaction comes from core, never from a trigger: `SlidingWindowCompaction`'s trigger is out of
reach. `RequestEvery` asks for a compaction (`ctx.request_compaction`, from workflow code: a tool in
an activity may not) once the model has seen every `EVERY`-th step's return, and the model refuses a
view longer than `OVERFLOW` messages (`ModelContextWindowExceededError`), which core compacts and
retries. Every reply and every request depends only on the messages, as replay and recovery need.
After `STEPS` steps the model searches for what step 1 returned and quotes the answer.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import RunContext

from durable_recall import SlidingWindowCompaction, ToolResultClearing
from durable_recall.compaction import CLEARED_RESULT_KEY
from durable_recall.history import RecordBuilder
from durable_recall.stores import StepStore
from durable_recall.text import index_text, message_role
from tests.compaction._loop import DETAIL_QUERY, TASK, step_result

STEPS = 24
EVERY = 10
OVERFLOW = 20
"""Views up to 20 messages pass; requested compactions alone would let one reach 22 (10 steps after
one down to 4), so the loop overflows too, between requests."""


UNCLEARED = 8
"""For the clearing loop: views with up to 8 whole tool results pass (requests every 10 steps alone
would let 12 through), so it overflows between requests too."""


def window() -> SlidingWindowCompaction:
    return SlidingWindowCompaction(max_messages=10_000, keep_messages=4)


def clearing() -> ToolResultClearing:
    return ToolResultClearing(max_results=10_000, keep_results=2, min_chars=0)


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if len(messages) > OVERFLOW:
        raise ModelContextWindowExceededError('core-loop', f'{len(messages)} messages is too long')
    return loop_reply(messages)


def clearing_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    whole = [
        part
        for message in messages[:-1]
        for part in message.parts
        if isinstance(part, ToolReturnPart) and CLEARED_RESULT_KEY not in (part.metadata or {})
    ]
    if len(whole) > UNCLEARED:
        raise ModelContextWindowExceededError('core-loop', f'{len(whole)} tool results is too long')
    return loop_reply(messages)


def loop_reply(messages: list[ModelMessage]) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    for part in last.parts:
        if isinstance(part, ToolReturnPart) and part.tool_name == 'search_conversation_history':
            return ModelResponse(parts=[TextPart(f'QUOTE<<{part.content}>>')])
    newest = max((step_number(part) for message in messages for part in message.parts), default=0)
    if newest < STEPS:
        n = newest + 1
        return ModelResponse(parts=[ToolCallPart('step', {'n': n}, tool_call_id=f'call-{n}')])
    return ModelResponse(
        parts=[ToolCallPart('search_conversation_history', {'query': DETAIL_QUERY}, tool_call_id='call-search')]
    )


def step_number(part: object) -> int:
    """The step a tool call or return is for (0 for any other part)."""
    call_id = getattr(part, 'tool_call_id', None)
    match = re.fullmatch(r'call-(\d+)', call_id) if isinstance(call_id, str) else None
    return int(match.group(1)) if match else 0


def core_model(*, cleared: bool = False) -> FunctionModel:
    """The loop's model: it overflows past `OVERFLOW` messages, or (`cleared`) past `UNCLEARED` whole results."""
    return FunctionModel(clearing_reply if cleared else reply, model_name='core-loop')


class RequestEvery(AbstractCapability[Any]):
    """Asks core to compact once the pending request returns a step numbered a multiple of `EVERY`."""

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        last = ctx.messages[-1] if ctx.messages else None
        if isinstance(last, ModelRequest) and any(
            isinstance(part, ToolReturnPart) and step_number(part) % EVERY == 0 < step_number(part)
            for part in last.parts
        ):
            ctx.request_compaction(reason='manual')
        return request_context


def produced() -> list[str]:
    """The run's conversation, as the record's searchable text: the task, then each step's call and return."""
    texts = [TASK]
    for n in range(1, STEPS + 1):
        texts += [f'step {n}', step_result(n)]
    return texts


async def record_texts(store: StepStore, conversation_id: str) -> tuple[list[str], list[str]]:
    """The conversation's one run's record: its conversation texts and its summaries, each as indexed."""
    (run,) = await store.list_runs(conversation_id=conversation_id)
    builder = RecordBuilder()
    for snapshot in await store.list_snapshots(run.run_id):
        builder.fold(snapshot.messages)
    assert len(set(builder.hashes)) == len(builder.hashes), 'a message recorded twice'
    conversation = [index_text(m) for m in builder.messages if message_role(m) != 'summary' and index_text(m)]
    summaries = [index_text(m) for m in builder.messages if message_role(m) == 'summary']
    return conversation, summaries


def log_rows(database: Path, conversation_id: str) -> int:
    """The message rows the conversation's runs wrote to a SQLite store (bodies of their own)."""
    with closing(sqlite3.connect(database)) as conn:
        ((count,),) = conn.execute(
            'SELECT COUNT(*) FROM dr_messages m JOIN dr_runs r ON m.run_no = r.run_no WHERE r.conversation_id = ?',
            (conversation_id,),
        ).fetchall()
    return count
