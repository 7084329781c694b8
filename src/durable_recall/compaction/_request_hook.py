"""What both compaction capabilities do before a model request: compact in place, within a known window.

`SlidingWindowCompaction` and `ToolResultClearing` differ in what they cut, not in how a request
reaches them: both rewrite the run's history (so that later requests and the stored run see the
compacted history too), and both take `max_fraction` of a window they must first know.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model, ModelRequestContext
from pydantic_ai.tools import RunContext

from ._options import known_window

__all__ = ('CompactBeforeRequest',)


class CompactBeforeRequest:
    """A mixin for a compaction capability dataclass: its `before_model_request` hook and its window.

    Not a dataclass: the attributes below are the capability's own fields, declared here for the
    type checker only.
    """

    max_fraction: float | None
    context_window: int | None
    _warned_window: bool

    def compact(
        self, messages: Sequence[ModelMessage], *, context_window: int | None = None
    ) -> list[ModelMessage] | None:
        """The compacted history, or `None` to leave it alone (each capability's own)."""
        raise NotImplementedError

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Compact the run's history in place before the request is sent."""
        compacted = self.compact(ctx.messages, context_window=self._window(request_context.model))
        if compacted is not None:
            ctx.messages[:] = compacted
            request_context.messages = list(compacted)
        return request_context

    def _window(self, model: Model) -> int | None:
        """The window `max_fraction` is taken of (`None` without the option, or when unknown: warned once)."""
        if self.max_fraction is None:
            return None
        window = known_window(
            type(self).__name__,
            self.max_fraction,
            self.context_window,
            model.context_window,
            model.model_name,
            warn=not self._warned_window,
        )
        self._warned_window = self._warned_window or window is None
        return window
