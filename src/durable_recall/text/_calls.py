"""Which tool call a request part answers: the pairing that compaction cuts and settled snapshots respect."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelRequestPart

__all__ = ('answered_call_id',)


def answered_call_id(part: ModelRequestPart) -> str | None:
    """The tool call a request part answers, or `None` when it answers none.

    A `ToolReturnPart` answers its call; so does a legacy `RetryPromptPart` that names a tool
    (read by kind, since the class is deprecated but still found in stored histories).
    """
    if part.part_kind == 'tool-return':
        return part.tool_call_id
    if part.part_kind == 'retry-prompt' and part.tool_name is not None:
        return part.tool_call_id
    return None
