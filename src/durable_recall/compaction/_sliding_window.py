"""`SlidingWindowCompaction`: keep the newest messages in context; the store keeps the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, cast

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, TextContent, UserPromptPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from ..persistence._settled import answered_call_id

__all__ = (
    'COMPACTION_MARKER_KEY',
    'SlidingWindowCompaction',
    'compaction_marker_count',
    'has_compaction_marker',
    'is_compaction_marker',
    'is_marker_part',
    'without_marker',
)

COMPACTION_MARKER_KEY = 'durable_recall.compaction.v1'
"""Metadata key of the marker; its value is `{'dropped': <total count>}`.

Compatibility data. The key sits on the marker part's `TextContent` (core merges a marker request
with the prompt after it when a run inherits the history, keeping the parts but not the request's
metadata) and on the request, and search and the record rebuild leave marker parts out.
"""


def is_marker_part(part: object) -> bool:
    """Whether a request part is the text of a `SlidingWindowCompaction` marker."""
    return _marker_value(part) is not None


def is_compaction_marker(message: ModelMessage) -> bool:
    """Whether a message is nothing but a marker (not merged with a prompt)."""
    return isinstance(message, ModelRequest) and bool(message.parts) and all(map(is_marker_part, message.parts))


def has_compaction_marker(message: ModelMessage) -> bool:
    """Whether a message carries a marker part, alone or merged with a prompt."""
    return isinstance(message, ModelRequest) and any(map(is_marker_part, message.parts))


def compaction_marker_count(message: ModelMessage) -> int:
    """How many messages the message's marker says were dropped so far (0 without a marker)."""
    if not isinstance(message, ModelRequest):
        return 0
    counts = [_dropped(value) for part in message.parts if (value := _marker_value(part)) is not None]
    return max(counts, default=0)


def without_marker(message: ModelRequest) -> ModelRequest | None:
    """The request without its marker parts, or `None` if nothing else is left."""
    parts = [part for part in message.parts if not is_marker_part(part)]
    return replace(message, parts=parts, metadata=_without_key(message.metadata)) if parts else None


def _marker_value(part: object) -> object | None:
    if not isinstance(part, UserPromptPart) or isinstance(part.content, str):
        return None
    for item in part.content:
        tag: object = item.metadata if isinstance(item, TextContent) else None
        if isinstance(tag, dict):
            metadata = cast(dict[str, object], tag)
            if COMPACTION_MARKER_KEY in metadata:
                return metadata[COMPACTION_MARKER_KEY]
    return None


def _dropped(value: object) -> int:
    dropped = cast(dict[str, object], value).get('dropped') if isinstance(value, dict) else None
    return dropped if isinstance(dropped, int) and not isinstance(dropped, bool) else 0


def _without_key(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    if not metadata or COMPACTION_MARKER_KEY not in metadata:
        return metadata
    rest = {key: value for key, value in metadata.items() if key != COMPACTION_MARKER_KEY}
    return rest or None


@dataclass
class SlidingWindowCompaction(AbstractCapability[Any]):
    """Drop the oldest messages once the history is longer than `max_messages`.

    The cut never separates a tool call from its return: the kept window always starts at a
    request that answers no tool call. When no such cut exists within the window, the window
    grows back to the nearest one rather than send a provider an orphan tool return.

    The edit is persistent (the run's history itself shrinks), which is the case durable recall
    exists for: pair it with `StepPersistence` (which snapshots before this runs) and
    `ConversationSearch`, and the model can still fetch what was dropped.

    Args:
        max_messages: How many messages to keep, not counting the marker. At least 1.
        marker: Put a request at the head of the history saying how many messages were dropped
            and that search can recall them. It carries `COMPACTION_MARKER_KEY` metadata, so
            search never indexes it.
    """

    max_messages: int = 40
    marker: bool = True
    _: KW_ONLY
    id: str | None = 'sliding_window_compaction'

    def __post_init__(self) -> None:
        if isinstance(self.max_messages, bool) or not isinstance(self.max_messages, int) or self.max_messages < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f'max_messages must be an int of at least 1, got {self.max_messages!r}')
        if not isinstance(self.marker, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'marker must be a bool, got {self.marker!r}')

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Spec name, so `SlidingWindowCompaction` can be configured from an agent spec."""
        return 'SlidingWindowCompaction'

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Compact the run's history in place before the request is sent."""
        compacted = self.compact(ctx.messages)
        if compacted is not None:
            ctx.messages[:] = compacted
            request_context.messages = list(compacted)
        return request_context

    def compact(self, messages: Sequence[ModelMessage]) -> list[ModelMessage] | None:
        """The compacted history, or `None` when nothing needs dropping."""
        body = list(messages)
        already = 0
        if body and has_compaction_marker(body[0]):
            # Our earlier marker, alone or merged by core into the prompt that followed it.
            head = body[0]
            assert isinstance(head, ModelRequest)
            already = compaction_marker_count(head)
            rest = without_marker(head)
            body = body[1:] if rest is None else [rest, *body[1:]]
        if len(body) <= self.max_messages:
            return None
        cut = _safe_cut(body, len(body) - self.max_messages)
        if cut is None or cut == 0:
            return None
        kept = body[cut:]
        if not self.marker:
            return kept
        return [_marker(cut + already), *kept]


def _safe_cut(messages: Sequence[ModelMessage], wanted: int) -> int | None:
    """The cut nearest after `wanted` (else before it) where the window starts at a plain request."""
    for cut in range(wanted, len(messages)):
        if _starts_window(messages[cut]):
            return cut
    for cut in range(wanted - 1, 0, -1):
        if _starts_window(messages[cut]):
            return cut
    return None


def _starts_window(message: ModelMessage) -> bool:
    if not isinstance(message, ModelRequest):
        return False
    return all(answered_call_id(part) is None for part in message.parts)


def _marker(dropped: int) -> ModelRequest:
    noun = 'message was' if dropped == 1 else 'messages were'
    text = (
        f'[{dropped} earlier {noun} removed from this context window to save space. They are persisted: '
        'call `search_conversation_history` to recall an exact detail from them.]'
    )
    tag = {COMPACTION_MARKER_KEY: {'dropped': dropped}}
    return ModelRequest(parts=[UserPromptPart(content=[TextContent(text, metadata=tag)])], metadata=tag)
