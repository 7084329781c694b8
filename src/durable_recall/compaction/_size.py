"""How big a history is: its message count, and its tokens as the provider reported or as estimated.

Token triggers need the size of the request about to be sent, and a cut needs the size of what it
keeps. The provider's own count is the truth, but it exists only for a request already made, and
only as one total. So the size of the history now is the input and output tokens the provider
reported for the last response (what that request held, instructions and tool schemas included,
plus what it answered), plus an estimate of the messages that came after it (the tool returns
about to be sent). Before any response reports usage, the whole history is estimated.

The estimate is a character count over four (or the application's `tokenizer`), per part, of the
text a provider is sent: prompts, replies, tool names, call arguments and return values as JSON.
A media item counts a flat `MEDIA_TOKENS`. It is pure and deterministic, as workflow code needs.

What a cut keeps is measured in the provider's scale: its estimate, plus the part of the last
reported request that the estimate does not see (instructions, tool schemas, and the estimate's
own error), measured as that request's reported input tokens minus the estimate of the messages it
held. So `keep_tokens` and `max_tokens` bound the same quantity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pydantic_core
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextContent,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

__all__ = ('MEDIA_TOKENS', 'Tokenizer', 'TokenCount', 'estimate_message', 'measure')

MEDIA_TOKENS = 512
"""The estimate for one image, audio, video or document item (providers bill them by their own rules)."""

Tokenizer = Callable[[str], int]
"""Counts the tokens of a text (for example `lambda text: len(encoding.encode(text))`)."""


def _default_count(text: str) -> int:
    return (len(text) + 3) // 4


def estimate_message(message: ModelMessage, tokenizer: Tokenizer | None = None) -> int:
    """Estimated tokens of one message: its parts' texts counted, media items at a flat rate."""
    count = tokenizer or _default_count
    total = 0
    for part in message.parts:
        texts, media = _part_texts(part)
        total += sum(count(text) for text in texts) + media * MEDIA_TOKENS
    return total


@dataclass(frozen=True)
class TokenCount:
    """The history's size in tokens, and what a shorter history would measure in the same scale.

    Attributes:
        total: The history's size now: reported where the provider reported, estimated after.
        overhead: What a request holds beyond its messages' estimate (instructions, tool schemas,
            the estimate's error): the last reported input minus the estimate of the messages it
            held, at least 0; 0 when nothing was reported.
        reported: Whether `total` starts from a provider's report.
    """

    total: int
    overhead: int
    reported: bool


def measure(messages: Sequence[ModelMessage], sizes: Sequence[int]) -> TokenCount:
    """The size of `messages` (whose estimates are `sizes`), from the last response that reported usage.

    Args:
        messages: The history about to be sent.
        sizes: `estimate_message` of each message, in order.
    """
    for index in range(len(messages) - 1, -1, -1):
        response = messages[index]
        if not isinstance(response, ModelResponse):
            continue
        usage = response.usage
        if usage.input_tokens <= 0:
            continue
        after = sum(sizes[index + 1 :])
        overhead = max(0, usage.input_tokens - sum(sizes[:index]))
        return TokenCount(usage.input_tokens + usage.output_tokens + after, overhead, True)
    return TokenCount(sum(sizes), 0, False)


def _part_texts(part: object) -> tuple[list[str], int]:
    """The texts a provider is sent for a part, and how many media items it holds."""
    if isinstance(part, ToolCallPart):
        return [part.tool_name, part.args_as_json_str()], 0
    if isinstance(part, ToolReturnPart):
        return [part.tool_name, part.model_response_str()], 0
    if isinstance(part, UserPromptPart):
        if isinstance(part.content, str):
            return [part.content], 0
        texts: list[str] = []
        media = 0
        for item in part.content:
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, TextContent):
                texts.append(item.content)
            else:
                media += 1
        return texts, media
    content: object = getattr(part, 'content', None)
    if isinstance(content, str):
        return [content], 0
    if content is None:
        return [], 0
    return [_json(content)], 0


def _json(value: object) -> str:
    try:
        return pydantic_core.to_json(value, fallback=str).decode()
    except Exception:  # a value even the fallback cannot render: count its repr
        return repr(value)
