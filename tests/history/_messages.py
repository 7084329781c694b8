"""Distinct messages, compaction artifacts and re-stamped copies for the history tests."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from pydantic_ai.messages import (
    CompactionPart,
    InstructionDeltaPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from durable_recall.history import RecordBuilder, message_hash
from durable_recall.text import HARNESS_LEGACY_SUMMARY_PREFIX, HARNESS_RECEIPT_TAG, HARNESS_SUMMARY_KEY

BASE = datetime(2025, 1, 1, tzinfo=UTC)
_clock = itertools.count(1)


def tick() -> datetime:
    """A fresh creation time: every message made here is distinct, as real ones are."""
    return BASE + timedelta(seconds=next(_clock))


def user(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=text, timestamp=tick())])


def reply(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)], model_name='test', timestamp=tick())


def call(call_id: str, tool: str = 'read_file') -> ModelResponse:
    return ModelResponse(
        parts=[ToolCallPart(tool, {'path': call_id}, tool_call_id=call_id)], model_name='test', timestamp=tick()
    )


def tool_return(call_id: str, content: str | None = None, tool: str = 'read_file') -> ModelRequest:
    part = ToolReturnPart(tool, content or f'contents of {call_id}', tool_call_id=call_id, timestamp=tick())
    return ModelRequest(parts=[part])


def cleared(message: ModelMessage, placeholder: str = '[cleared]') -> ModelRequest:
    """A new message object with each tool result blanked, as a clear-tool-results strategy writes it."""
    assert isinstance(message, ModelRequest)
    parts = [
        ToolReturnPart(part.tool_name, placeholder, tool_call_id=part.tool_call_id, timestamp=tick())
        if isinstance(part, ToolReturnPart)
        else part
        for part in message.parts
    ]
    return ModelRequest(parts=parts)


def restamped(message: ModelMessage) -> ModelMessage:
    """The same message as a DBOS recovery or a new run rebuilds it: new timestamps and run ids."""
    if isinstance(message, ModelResponse):
        return replace(message, run_id='replayed-run', conversation_id='replayed-conversation')
    parts = [replace(part, timestamp=tick()) if hasattr(part, 'timestamp') else part for part in message.parts]
    return replace(message, parts=parts, timestamp=tick(), run_id='replayed-run', instructions='re-rendered')


def with_delta(message: ModelMessage) -> ModelRequest:
    """The request with an `on_change='append'` instruction change core adds after the first save."""
    assert isinstance(message, ModelRequest)
    return replace(message, parts=[*message.parts, InstructionDeltaPart(id=None, content='Be brief.')])


def summary_part(text: str = 'the story so far') -> CompactionPart:
    return CompactionPart(content=text, metadata={HARNESS_SUMMARY_KEY: True})


def summary(text: str = 'the story so far') -> ModelRequest:
    """The harness's current summary shape: a request holding a marked `CompactionPart`."""
    return ModelRequest(parts=[summary_part(text)])


def recorded(text: str = 'the story so far') -> ModelRequest:
    """What the record holds for a summary, in either shape: its text as a plain `CompactionPart`, once."""
    return ModelRequest(parts=[CompactionPart(content=text)])


def legacy_summary(text: str = 'the story so far') -> ModelRequest:
    """The harness's older summary shape: a system prompt with the exact prefix."""
    return ModelRequest(parts=[SystemPromptPart(HARNESS_LEGACY_SUMMARY_PREFIX + text)])


def receipt(count: int = 2) -> ModelRequest:
    text = f'[History before this point ({count} messages, ~100 tokens) was dropped by sliding window.]'
    return ModelRequest(parts=[UserPromptPart(content=[TextContent(text, metadata=HARNESS_RECEIPT_TAG)])])


def hashes(messages: Sequence[ModelMessage]) -> list[str]:
    return [message_hash(message) for message in messages]


def rebuild(*snapshots: Sequence[ModelMessage]) -> list[ModelMessage]:
    builder = RecordBuilder()
    for snapshot in snapshots:
        builder.fold(snapshot)
    assert list(builder.hashes) == hashes(builder.messages)
    return list(builder.messages)


def same_messages(actual: Sequence[ModelMessage], expected: Sequence[ModelMessage]) -> bool:
    """Equal content, message for message (what the record promises)."""
    return hashes(actual) == hashes(expected)
