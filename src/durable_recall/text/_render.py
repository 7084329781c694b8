"""Render a message the way search sees it: searchable text for the index, labelled lines for display.

The two modes differ on purpose. The index holds only what was said: no role labels, no markup,
no tool-call punctuation. Were `User:` indexed, the query `user` would match every user message
and the label words would inflate every document's length. Display adds the labels back, so the
model can tell who said what, and clips each part around the query.

What is indexed, part by part:

* user prompts: their text items (binary and media items are skipped, the text next to them kept);
* system prompts, and the new text of an instruction change (without its `<context>` markup);
* assistant text, and speech transcripts from either side;
* tool calls: the tool name and the argument *values*. Argument keys are left out: they are the
  tool's schema, repeated on every call of it (`path`, `query`, `id`), so like role labels they
  would match every call and say nothing about any one of them;
* tool returns: strings as they are, anything else as compact JSON. Keys stay here, because a
  result's keys are often data (a mapping by file or customer name). The tool name is not repeated:
  the call already carries it;
* retries, from a tool or about the output: the feedback text, or the validation errors as JSON;
* a compaction summary an application wrote into a request, and the record's view of a
  harness summary (`history.summary_view`: a plain `CompactionPart` holding its text);
* capability parts (pydantic-ai 2.78): the content the model is shown, labelled with its voice,
  kind and source (see `_capability` for the ones left out);
* a part kind this version does not know (a later pydantic-ai's): its text fields, shown as
  `Part [kind]`, so no release makes a conversation's content unsearchable.

Never indexed, and not displayed either: thinking, files, native (provider-run) tool parts, a
provider's compaction of a response, bookkeeping parts (tool availability, capability loading,
model settings, instruction baselines), request-scoped capability parts, the marker request a
`SlidingWindowCompaction` writes, the harness's compaction summaries and receipts as stored (the
record holds each summary once, in its own view), and the search
tool's own calls and returns. Those last ones would echo: a later search would find earlier search
results, which quote the originals, and often rank them above the originals.

Displayed only when the caller allows it: the calls and returns of tools pydantic-ai stamped
`'private'` or `'redacted'` (`_visibility`). Under a `SkipTools` that withholds them, each message
shows one `WITHHELD` line in their place, and `index_text` leaves them out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

if TYPE_CHECKING:
    from pydantic_ai.messages import (
        InstructionDeltaPart,
        ModelMessage,
        SpeechPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

from .._vocabulary import SEARCH_TOOL_NAME
from . import _parts
from ._artifacts import is_compaction_receipt, is_summary_artifact
from ._capability import (
    CAPABILITY_PART_KIND,
    QUIET_REQUEST_KINDS,
    QUIET_RESPONSE_KINDS,
    capability_fields,
    content_text,
    generic_text,
    result_tool,
)
from ._clip import clip
from ._markers import is_compaction_marker, is_marker_part
from ._visibility import WITHHELD, withholds

__all__ = (
    'DEFAULT_SKIP_TOOLS',
    'EARLIER_SEARCH',
    'RETURN_LABELS',
    'Piece',
    'capability_piece',
    'piece_line',
    'unknown_piece',
    'retry_text',
    'return_piece',
    'to_json',
    'value_text',
    'NO_TEXT',
    'SHORT_LIMIT',
    'TEXT_LIMIT',
    'display_lines',
    'index_text',
)

DEFAULT_SKIP_TOOLS: frozenset[str] = frozenset({SEARCH_TOOL_NAME})
"""Tools whose calls and returns are never indexed: the search tool itself, so it never finds itself."""

TEXT_LIMIT = 500
"""Display characters kept per part."""

SHORT_LIMIT = 200
"""Display characters kept for system text and tool-call arguments, which are rarely what was asked for."""

NO_TEXT = '[no text content]'
"""The display line of a message with nothing to show, such as a response holding only thinking."""

RETURN_LABELS = {
    'success': 'Tool return',
    'failed': 'Tool failed',
    'denied': 'Tool denied',
    'interrupted': 'Tool interrupted',
}


class Piece(NamedTuple):
    """One part as both modes need it."""

    indexed: str
    """Searchable text; empty for a part that is shown but holds nothing to search."""
    label: str
    """Display text before the body."""
    body: str
    """Display text clipped around the query."""
    limit: int
    """How many characters of `body` display keeps."""
    closing: str = ''
    """Display text after the body."""


def index_text(message: ModelMessage, *, skip_tools: Collection[str] = DEFAULT_SKIP_TOOLS) -> str:
    """The searchable text of a message: its parts' text joined by newlines, without labels.

    Args:
        message: Any message; one with nothing searchable gives `''`.
        skip_tools: Tool names whose calls and returns are left out. Pass the search tool's name
            when it is registered under another name or with a prefix. A `SkipTools` also leaves
            out the parts it withholds (the text an answer may show of the message).
    """
    return '\n'.join(piece.indexed for piece in _pieces(message, skip_tools) if piece is not None and piece.indexed)


def display_lines(
    message: ModelMessage,
    terms: Collection[str],
    *,
    rarity: Mapping[str, float] | None = None,
    skip_tools: Collection[str] = DEFAULT_SKIP_TOOLS,
) -> list[str]:
    """A message as the model is shown it in results: one labelled, clipped line per part.

    A line may hold newlines of the part's own text.

    Args:
        message: Any message; one with nothing to show gives `[NO_TEXT]`.
        terms: The query's terms, which each part's excerpt centres on.
        rarity: The terms' idf, so the excerpt centres on the rarest term a part holds.
        skip_tools: As for `index_text`, so display and index agree on what a message holds.
    """
    lines: list[str] = []
    for piece in _pieces(message, skip_tools):
        if piece is not None:
            lines.append(piece_line(piece, terms, rarity))
        elif WITHHELD not in lines:
            lines.append(WITHHELD)
    if not lines and _is_skipped_tool_traffic(message, skip_tools):
        return [EARLIER_SEARCH]
    return lines or [NO_TEXT]


def piece_line(piece: Piece, terms: Collection[str], rarity: Mapping[str, float] | None) -> str:
    """A part's display line: its label, its body clipped around the query, its closing."""
    return (piece.label + clip(piece.body, piece.limit, terms, rarity) + piece.closing).rstrip()


EARLIER_SEARCH = '[an earlier search, not repeated]'
"""Shown in place of the search tool's own calls and results, which are never indexed."""


def _is_skipped_tool_traffic(message: ModelMessage, skip_tools: Collection[str]) -> bool:
    return any(getattr(part, 'tool_name', None) in skip_tools for part in message.parts)


def _pieces(message: ModelMessage, skip_tools: Collection[str]) -> Iterator[Piece | None]:
    """The pieces of the parts shown, `None` for each one withheld (see `_visibility`)."""
    if is_compaction_marker(message):
        return
    in_request = message.kind == 'request'
    for part in message.parts:
        if _is_machinery(part, skip_tools):
            continue
        piece = _request_piece(part, skip_tools) if in_request else _response_piece(part)
        if piece is not None:
            yield None if _is_withheld(part, skip_tools) else piece


def _is_withheld(part: object, skip_tools: Collection[str]) -> bool:
    if getattr(part, 'part_kind', None) == CAPABILITY_PART_KIND:
        # A capability part carrying a tool's result is that tool's output: withheld as its tool is
        # (by name only: such a part has no `ui_visibility` stamp of its own).
        return withholds(skip_tools, result_tool(part), None) if result_tool(part) is not None else False
    if not isinstance(part, _parts.ToolCallPart | _parts.ToolReturnPart) and not _is_legacy_retry(part):
        return False
    tool_name: object = getattr(cast(object, part), 'tool_name', None)
    stamp: object = getattr(cast(object, part), 'ui_visibility', None)  # absent before pydantic-ai 2.78
    return withholds(skip_tools, tool_name if isinstance(tool_name, str) else None, stamp)


def _is_machinery(part: object, skip_tools: Collection[str]) -> bool:
    if is_summary_artifact(part) or is_compaction_receipt(part) or is_marker_part(part):
        return True
    tool_name: object = getattr(part, 'tool_name', None)
    if isinstance(part, _parts.ToolCallPart | _parts.ToolReturnPart) or _is_legacy_retry(part):
        return tool_name in skip_tools
    return False


def _is_legacy_retry(part: object) -> bool:
    """A `RetryPromptPart`, recognised by its kind: the class is deprecated, and naming it warns."""
    return getattr(part, 'part_kind', None) == 'retry-prompt'


def _request_piece(part: object, skip_tools: Collection[str]) -> Piece | None:
    kind = getattr(part, 'part_kind', None)
    if kind == CAPABILITY_PART_KIND:
        return capability_piece(part, skip_tools)
    if isinstance(part, _parts.UserPromptPart):
        return _text_piece('User: ', _user_text(part), TEXT_LIMIT)
    if isinstance(part, _parts.SystemPromptPart):
        return _text_piece('System: ', part.content, SHORT_LIMIT)
    if isinstance(part, _parts.InstructionDeltaPart):
        return _instruction_piece(part)
    if isinstance(part, _parts.ToolReturnPart):
        return _return_piece(cast('ToolReturnPart[Any]', part))
    if isinstance(part, _parts.RetryFeedbackPart):
        return _text_piece('Retry: ', retry_text(part.content), TEXT_LIMIT)
    if isinstance(part, _parts.CompactionPart):
        return _text_piece('Summary: ', part.content or '', TEXT_LIMIT)
    if isinstance(part, _parts.SpeechPart):
        return _speech_piece(part)
    if _is_legacy_retry(part):
        tool_name = getattr(part, 'tool_name', None)
        label = f'Retry [{tool_name}]: ' if isinstance(tool_name, str) else 'Retry: '
        return _text_piece(label, retry_text(getattr(part, 'content', None)), TEXT_LIMIT)
    return None if kind in QUIET_REQUEST_KINDS else _unknown_piece(part)


def _response_piece(part: object) -> Piece | None:
    if isinstance(part, _parts.TextPart):
        return _text_piece('Assistant: ', part.content, TEXT_LIMIT)
    if isinstance(part, _parts.ToolCallPart):
        return _call_piece(cast('ToolCallPart[Any]', part))
    if isinstance(part, _parts.SpeechPart):
        return _speech_piece(part)
    return None if getattr(part, 'part_kind', None) in QUIET_RESPONSE_KINDS else _unknown_piece(part)


def capability_piece(part: object, skip_tools: Collection[str]) -> Piece | None:
    """A capability part's piece (its object or its stored JSON): `None` when it is left out."""
    fields = capability_fields(part, skip_tools)
    if fields is None:
        return None
    label, _, content, attributes = fields
    text = '\n'.join(item for item in (*attributes, content_text(content)) if item.strip())
    return _text_piece(label, text, TEXT_LIMIT)


def unknown_piece(part_kind: str, fields: Mapping[str, object]) -> Piece | None:
    """The piece of a part kind this version does not know: its text, shown generically."""
    return _text_piece(f'Part [{part_kind}]: ', generic_text(fields), TEXT_LIMIT)


def _unknown_piece(part: object) -> Piece | None:
    import pydantic_core

    fields = pydantic_core.to_jsonable_python(part, serialize_unknown=True, bytes_mode='base64')
    if not isinstance(fields, dict):
        return None
    return unknown_piece(str(getattr(part, 'part_kind', None) or type(part).__name__), cast(dict[str, object], fields))


def _text_piece(label: str, text: str, limit: int) -> Piece | None:
    return Piece(text, label, text, limit) if text.strip() else None


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    texts: list[str] = []
    for item in part.content:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, _parts.TextContent):
            texts.append(item.content)
    return ' '.join(texts)


def _instruction_piece(part: InstructionDeltaPart) -> Piece | None:
    label = f'Instructions [{part.id}]' if part.id is not None else 'Instructions'
    if part.content is None:
        return Piece('', f'{label} withdrawn', '', SHORT_LIMIT)
    return _text_piece(f'{label}: ', part.content, SHORT_LIMIT)


def _speech_piece(part: SpeechPart) -> Piece | None:
    return _text_piece(f'Speech [{part.speaker}]: ', part.transcript or '', TEXT_LIMIT)


def _return_piece(part: ToolReturnPart[Any]) -> Piece:
    return return_piece(part.tool_name, part.outcome, cast(object, part.content))


def return_piece(tool_name: str, outcome: str, content: object) -> Piece:
    """A tool return's display piece, from its fields (shared with the stored-JSON renderer)."""
    if outcome == 'retried':
        text = retry_text(content)
        label = f'Retry [{tool_name}]: '
    else:
        items = cast(list[object], content) if isinstance(content, list) else [content]
        text = ' '.join(item_text for item in items if (item_text := value_text(item)))
        label = f'{RETURN_LABELS.get(outcome, "Tool return")} [{tool_name}]: '
    return Piece(text, label, text, TEXT_LIMIT)


def _call_piece(part: ToolCallPart[Any]) -> Piece:
    import pydantic_core

    args = part.args_as_dict()
    values = _json_values(pydantic_core.to_jsonable_python(args, serialize_unknown=True, bytes_mode='base64'))
    searchable = ' '.join([part.tool_name, *values])
    return Piece(searchable, f'Tool call {part.tool_name}(', to_json(args) if args else '', SHORT_LIMIT, ')')


def retry_text(content: object) -> str:
    """The feedback a retry carries: a message as is, validation errors as JSON without `ctx`.

    `ctx` is whatever a validator was handed as context: the application's data, not the model's
    mistake, and never shown to the model either.
    """
    if isinstance(content, list):
        errors = [
            {key: value for key, value in cast(dict[str, object], item).items() if key != 'ctx'}
            if isinstance(item, dict)
            else item
            for item in cast(list[object], content)
        ]
        return to_json(errors)
    return value_text(content)


def value_text(value: object) -> str:
    if value is None or _parts.is_multi_modal_content(value):
        return ''
    if isinstance(value, str):
        return value
    return to_json(value)


def to_json(value: object) -> str:
    import pydantic_core

    return pydantic_core.to_json(value, serialize_unknown=True, bytes_mode='base64').decode()


def _json_values(value: object) -> Iterator[str]:
    """The leaf values of JSON data: strings and numbers; booleans and nulls say nothing searchable."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)
    elif isinstance(value, dict):
        for item in cast(dict[str, object], value).values():
            yield from _json_values(item)
    elif isinstance(value, list):
        for item in cast(list[object], value):
            yield from _json_values(item)
