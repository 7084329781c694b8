"""pydantic-ai's message classes the text layer looks at, loaded on first use (PEP 562).

The layer's modules name them as `_parts.UserPromptPart`, never import them: importing this layer
(with a store, for a command that only reads rows) then loads no pydantic-ai, which takes most of
a second. The first lookup of a name imports `pydantic_ai.messages` and keeps the class in this
module's namespace, so every later lookup is a plain attribute read, cheap in a loop over parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_ai.messages import (
        CompactionPart,
        InstructionDeltaPart,
        ModelRequest,
        RetryFeedbackPart,
        SpeechPart,
        SystemPromptPart,
        TextContent,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
        is_multi_modal_content,
    )

__all__ = (
    'CompactionPart',
    'InstructionDeltaPart',
    'ModelRequest',
    'RetryFeedbackPart',
    'SpeechPart',
    'SystemPromptPart',
    'TextContent',
    'TextPart',
    'ToolCallPart',
    'ToolReturnPart',
    'UserPromptPart',
    'is_multi_modal_content',
)


def __getattr__(name: str) -> Any:
    """Import the named class from `pydantic_ai.messages` and keep it here."""
    if name not in __all__:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    import pydantic_ai.messages

    value = globals()[name] = getattr(pydantic_ai.messages, name)
    return value
