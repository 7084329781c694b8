"""Requests and responses of given parts, and the part contents several rendering tests share."""

from __future__ import annotations

import warnings
from typing import Any

from pydantic_ai import PydanticAIDeprecationWarning
from pydantic_ai import messages as m

PNG = b'\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR'
UNITS = m.InstructionId(m.ToolsetInstructionSource('weather'), name='units')
VALIDATION_ERROR: Any = {'type': 'missing', 'loc': ('city',), 'msg': 'Field required', 'input': {}, 'ctx': {'k': 1}}


def legacy_retry(content: str | list[Any], tool_name: str | None) -> Any:
    """A `RetryPromptPart`, deprecated by pydantic-ai but still found in stored histories."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', PydanticAIDeprecationWarning)
        return m.RetryPromptPart(content=content, tool_name=tool_name)  # pyright: ignore[reportDeprecated]


def request(*parts: Any) -> m.ModelRequest:
    """A request of `parts`, in order; any object passes, so parts of unknown kinds can be built."""
    return m.ModelRequest(parts=list(parts))


def response(*parts: Any) -> m.ModelResponse:
    """A response of `parts`, in order; any object passes, as for `request`."""
    return m.ModelResponse(parts=list(parts))
