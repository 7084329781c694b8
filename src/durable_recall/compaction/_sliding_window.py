"""`SlidingWindowCompaction`: keep the newest messages in context; the store keeps the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from ..text import answered_call_id, compaction_marker_count, has_compaction_marker, marker_request, without_marker

__all__ = ('SlidingWindowCompaction',)


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
        return [marker_request(cut + already), *kept]


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
