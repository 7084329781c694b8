"""`SlidingWindowCompaction`: keep the newest messages in context; the store keeps the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, cast

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from ..persistence._settled import answered_call_id

__all__ = ('COMPACTION_MARKER_KEY', 'SlidingWindowCompaction', 'compaction_marker_count', 'is_compaction_marker')

COMPACTION_MARKER_KEY = 'durable_recall.compaction.v1'
"""`ModelRequest.metadata` key of the marker request; its value is `{'dropped': <total count>}`.

Compatibility data: search leaves requests carrying it out of the index.
"""


def is_compaction_marker(message: ModelMessage) -> bool:
    """Whether a message is the marker a `SlidingWindowCompaction` wrote."""
    return isinstance(message, ModelRequest) and bool(message.metadata) and COMPACTION_MARKER_KEY in message.metadata


def compaction_marker_count(message: ModelMessage) -> int:
    """How many messages the marker says were dropped so far (0 for any other message)."""
    if not is_compaction_marker(message):
        return 0
    assert isinstance(message, ModelRequest) and message.metadata is not None
    value: object = message.metadata[COMPACTION_MARKER_KEY]
    dropped = cast(dict[str, object], value).get('dropped') if isinstance(value, dict) else None
    return dropped if isinstance(dropped, int) else 0


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
        previous_marker = messages[0] if messages and is_compaction_marker(messages[0]) else None
        body = list(messages[1:] if previous_marker is not None else messages)
        if len(body) <= self.max_messages:
            return None
        cut = _safe_cut(body, len(body) - self.max_messages)
        if cut is None or cut == 0:
            return None
        kept = body[cut:]
        if not self.marker:
            return kept
        dropped = cut + (compaction_marker_count(previous_marker) if previous_marker is not None else 0)
        return [_marker(dropped), *kept]


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
    return ModelRequest(parts=[UserPromptPart(content=text)], metadata={COMPACTION_MARKER_KEY: {'dropped': dropped}})
