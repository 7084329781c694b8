"""The marker request `SlidingWindowCompaction` writes at the head of a compacted history.

Defined below the record rebuild and the indexing text, which both recognise markers and leave
them out; the compaction capability writes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage, ModelRequest

from .._vocabulary import SEARCH_TOOL_NAME
from . import _parts

__all__ = (
    'COMPACTION_MARKER_KEY',
    'compaction_marker_count',
    'has_compaction_marker',
    'is_compaction_marker',
    'is_marker_part',
    'marker_request',
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
    return message.kind == 'request' and bool(message.parts) and all(map(is_marker_part, message.parts))


def has_compaction_marker(message: ModelMessage) -> bool:
    """Whether a message carries a marker part, alone or merged with a prompt."""
    return message.kind == 'request' and any(map(is_marker_part, message.parts))


def compaction_marker_count(message: ModelMessage) -> int:
    """How many messages the message's marker says were dropped so far (0 without a marker)."""
    if message.kind != 'request':
        return 0
    counts = [_dropped(value) for part in message.parts if (value := _marker_value(part)) is not None]
    return max(counts, default=0)


def without_marker(message: ModelRequest) -> ModelRequest | None:
    """The request without its marker parts, or `None` if nothing else is left."""
    parts = [part for part in message.parts if not is_marker_part(part)]
    return replace(message, parts=parts, metadata=_without_key(message.metadata)) if parts else None


def _marker_value(part: object) -> object | None:
    if not isinstance(part, _parts.UserPromptPart) or isinstance(part.content, str):
        return None
    for item in part.content:
        tag: object = item.metadata if isinstance(item, _parts.TextContent) else None
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


def marker_request(dropped: int) -> ModelRequest:
    """The marker request saying `dropped` messages were removed (the count so far, in total)."""
    noun = 'message was' if dropped == 1 else 'messages were'
    text = (
        f'[{dropped} earlier {noun} removed from this context window to save space. They are persisted: '
        f'call `{SEARCH_TOOL_NAME}` to recall an exact detail from them.]'
    )
    tag = {COMPACTION_MARKER_KEY: {'dropped': dropped}}
    return _parts.ModelRequest(
        parts=[_parts.UserPromptPart(content=[_parts.TextContent(text, metadata=tag)])], metadata=tag
    )
