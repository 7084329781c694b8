"""The `CompactionPart` our capabilities write when pydantic-ai's core asks them to compact.

pydantic-ai 2.78 added a compaction protocol to core: a capability's `compact_history` hook returns
a `CompactionResult`, whose `CompactionPart` marks where the compacted history starts and must say,
in `content`, what it stands for. Ours are no summaries of what was said: they say what moved out
of view, and that `search_conversation_history` recalls it exactly (`StepPersistence` stored it).

The part rides in the history's first request, after its parts: the preserved first prompt (or,
without one, the standing system prompt). A request of its own would sit next to another request,
and core merges adjacent requests when a later run inherits the history, so the store would see a
merged message it never stored and index the preserved prompt a second time. In the first request
the standing system prompt stays first, as core requires, and the record rebuild takes the part
out of the message it rides in and records it once, as a summary (`history.summary_view`).

Everything here is pure: the same history gives the same part on every durable replay.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, SystemPromptPart

from .._vocabulary import SEARCH_TOOL_NAME
from ..history import CORE_SUMMARY_KEY

__all__ = (
    'CORE_COMPACTION',
    'SLIDING_WINDOW_HANDLER',
    'SUMMARY_KEY',
    'TOOL_RESULT_CLEARING_HANDLER',
    'cleared_summary',
    'compaction_after',
    'dropped_summary',
    'standing_prompt',
    'summary_count',
    'with_summary',
    'without_summary',
)

CORE_COMPACTION = importlib.util.find_spec('pydantic_ai.capabilities.compaction') is not None
"""Whether the installed pydantic-ai has core's compaction protocol (2.78 and later).

Asked of the module, never of a version string: a build that has the protocol gets the hooks."""

SLIDING_WINDOW_HANDLER = 'durable_recall.sliding_window'
"""`CompactionResult.handler` of `SlidingWindowCompaction`. Compatibility data: persisted on
`CompactionRecord.handler` and in run results."""

TOOL_RESULT_CLEARING_HANDLER = 'durable_recall.tool_result_clearing'
"""`CompactionResult.handler` of `ToolResultClearing`. Compatibility data, as above."""

SUMMARY_KEY = CORE_SUMMARY_KEY
"""`CompactionPart.metadata` key of a part we wrote; its value is `{'handler': ..., 'count': n}`.

`count` is the running total: messages dropped so far (sliding window) or tool results cleared so
far (clearing). Compatibility data: a later compaction reads it back from the persisted history."""


def dropped_summary(dropped: int) -> CompactionPart:
    """The part a sliding window writes: `dropped` messages (in total) moved out of view."""
    noun = 'message was' if dropped == 1 else 'messages were'
    text = (
        f'{dropped} earlier {noun} moved out of this context window to save space; only the newest '
        f'messages are shown after this note. Nothing was summarized or lost: every one of them is '
        f'persisted, and `{SEARCH_TOOL_NAME}` recalls any of them word for word. Call it when you '
        'need an exact detail from earlier in the conversation.'
    )
    return _part(text, SLIDING_WINDOW_HANDLER, dropped)


def cleared_summary(tools: Sequence[str], total: int) -> CompactionPart:
    """The part tool-result clearing writes: the results of `tools` (this time) cleared, `total` so far."""
    counts = Counter(tools)
    named = ', '.join(f'`{name}`' + (f' x{count}' if count > 1 else '') for name, count in sorted(counts.items()))
    noun = 'result was' if len(tools) == 1 else 'results were'
    so_far = '' if total == len(tools) else f' ({total} cleared so far in this conversation)'
    text = (
        f'{len(tools)} older tool {noun} cleared from this context window to save space{so_far}: {named}. '
        'Each cleared result still shows its call and a placeholder naming the exact '
        f'`{SEARCH_TOOL_NAME}` query that brings it back; every result is persisted and the search '
        'returns it word for word.'
    )
    return _part(text, TOOL_RESULT_CLEARING_HANDLER, total)


def _part(text: str, handler: str, count: int) -> CompactionPart:
    return CompactionPart(content=text, metadata={SUMMARY_KEY: {'handler': handler, 'count': count}})


def _ours(part: object, handler: str) -> bool:
    if not isinstance(part, CompactionPart) or not isinstance(part.metadata, dict):
        return False
    value: object = part.metadata.get(SUMMARY_KEY)
    return isinstance(value, dict) and cast(dict[str, object], value).get('handler') == handler


def summary_count(message: ModelMessage, handler: str) -> int:
    """The running total `handler`'s part in `message` carries (0 without one)."""
    counts: list[int] = []
    for part in message.parts:
        if _ours(part, handler):
            assert isinstance(part, CompactionPart) and part.metadata is not None
            count: object = cast(dict[str, Any], part.metadata[SUMMARY_KEY]).get('count')
            counts.append(count if isinstance(count, int) and not isinstance(count, bool) else 0)
    return max(counts, default=0)


def without_summary(message: ModelRequest, handler: str) -> ModelRequest | None:
    """The request without `handler`'s parts; `None` when nothing else is left."""
    parts = [part for part in message.parts if not _ours(part, handler)]
    if len(parts) == len(message.parts):
        return message
    return replace(message, parts=parts) if parts else None


def with_summary(message: ModelRequest, part: CompactionPart) -> ModelRequest:
    """The request carrying `part` after its own parts (the standing system prompt stays first)."""
    return replace(message, parts=[*message.parts, part])


def standing_prompt(messages: Sequence[ModelMessage]) -> list[SystemPromptPart]:
    """The system prompt parts the history opens with, which a compacted history must keep first."""
    first = messages[0] if messages else None
    if not isinstance(first, ModelRequest):
        return []
    parts: list[SystemPromptPart] = []
    for part in first.parts:
        if not isinstance(part, SystemPromptPart):
            break
        parts.append(part)
    return parts


def compaction_after(messages: Sequence[ModelMessage]) -> bool:
    """Whether any of `messages` holds a `CompactionPart` (another capability's or a provider's).

    Core requires the part a compaction returns to be the history's latest, so a history whose kept
    messages hold one is left to whoever wrote it.
    """
    return any(isinstance(part, CompactionPart) for message in messages for part in message.parts)
