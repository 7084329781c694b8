"""Display lines straight from a stored message's JSON, without building pydantic-ai objects.

A search answer shows 35 to 40 messages. Validating each stored body into pydantic-ai's classes
(`ModelMessagesTypeAdapter`) cost more than half of what showing it did, and nothing of those
objects is needed to render the few fields display reads. So a body is parsed as plain JSON
and its parts are turned into the very `Piece`s `display_lines` makes (`prepare_stored`); the
lines then come from the same `piece_line` (`stored_lines`).

Exactness over coverage: the fast path knows the part shapes pydantic-ai writes for ordinary
conversation (prompts, text, tool calls and returns, speech, summaries, capability parts and the
bookkeeping parts display leaves out), and renders a part kind no pydantic-ai it knows of writes
(a later release's) generically, from its JSON, as the object path does. Anything else (a legacy
retry part, a typed tool part, content a validator would turn into a media object, a field of
another type) gives `None`, and the caller decodes the message with pydantic-ai and renders it
with `display_lines`. A test compares both paths on every part shape the suite knows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import NamedTuple, cast

from ._artifacts import HARNESS_LEGACY_SUMMARY_PREFIX, HARNESS_RECEIPT_TAG, HARNESS_SUMMARY_KEY
from ._capability import CAPABILITY_PART_KIND, QUIET_REQUEST_KINDS, QUIET_RESPONSE_KINDS, result_tool
from ._markers import COMPACTION_MARKER_KEY
from ._render import (
    EARLIER_SEARCH,
    NO_TEXT,
    RETURN_LABELS,
    SHORT_LIMIT,
    TEXT_LIMIT,
    Piece,
    capability_piece,
    piece_line,
    retry_text,
    return_piece,
    to_json,
    unknown_piece,
)
from ._visibility import WITHHELD, withholds

__all__ = ('Prepared', 'prepare_stored', 'stored_lines')


class Prepared(NamedTuple):
    """A stored message ready to display under any query: its pieces, and the tools it names."""

    pieces: tuple[tuple[str | None, str | None, Piece], ...]
    """Each shown part's piece, with the tool it calls or answers (`None` for other parts) and that
    part's `ui_visibility` stamp: a part of a skipped tool is left out, and one the caller withholds
    shown as `WITHHELD`, when the lines are made, since which tools are skipped and withheld is the caller's."""
    tools: frozenset[str]
    """The tool names of all its parts, so that a message of nothing but skipped tool traffic says so."""


class _Unknown(Exception):
    """A shape the fast path does not know: the caller goes through pydantic-ai."""


_USER_ITEM_KINDS = frozenset(
    {'image-url', 'audio-url', 'document-url', 'video-url', 'binary', 'uploaded-file', 'cache-point'}
)
"""User-prompt items display leaves out (media, files, cache points)."""

_TEXT_ITEM_KINDS = frozenset({'text-content', 'structured-content'})
"""User-prompt items whose `content` display shows (`StructuredContent` is a `TextContent`)."""

_OUTCOMES = frozenset({*RETURN_LABELS, 'retried'})

_VISIBILITIES = frozenset({'public', 'redacted', 'private'})

_INVALID_JSON_KEY = 'INVALID_JSON'
"""What pydantic-ai's `args_as_dict` keys arguments that are not a JSON object under."""


def prepare_stored(body: str) -> Prepared | None:
    """A stored body's display pieces, or `None` when the fast path does not know its shape.

    Args:
        body: A message's JSON text, as `decode_body` gives it.
    """
    import pydantic_core

    try:
        # pydantic-core's parser, the one validation parses stored JSON with (and twice as fast as
        # `json.loads`); without NaN and Infinity, which `dump_messages` never writes.
        data: object = pydantic_core.from_json(body, allow_inf_nan=False)
        return _prepare(data)
    except (_Unknown, KeyError, ValueError, RecursionError):
        return None


def stored_lines(
    prepared: Prepared,
    terms: Collection[str],
    *,
    rarity: Mapping[str, float] | None = None,
    skip_tools: Collection[str],
) -> list[str]:
    """The message's display lines, exactly as `display_lines` gives them for the decoded message."""
    lines: list[str] = []
    for tool, stamp, piece in prepared.pieces:
        if tool is not None and tool in skip_tools:
            continue
        if tool is None or not withholds(skip_tools, tool, stamp):
            lines.append(piece_line(piece, terms, rarity))
        elif WITHHELD not in lines:
            lines.append(WITHHELD)
    if not lines and any(tool in skip_tools for tool in prepared.tools):
        return [EARLIER_SEARCH]
    return lines or [NO_TEXT]


def _prepare(data: object) -> Prepared:
    message = _dict(data)
    kind = message.get('kind')
    parts = [_dict(part) for part in _list(message.get('parts'))]
    kinds = [_str(part.get('part_kind')) for part in parts]
    tools = frozenset(_str(part['tool_name']) for part in parts if 'tool_name' in part)
    if kind == 'request':
        markers = [_is_marker(part, part_kind) for part, part_kind in zip(parts, kinds, strict=True)]
        if parts and all(markers):
            return Prepared((), tools)  # a compaction marker, shown as nothing
        pieces = _request_pieces(parts, kinds, markers)
    elif kind == 'response':
        pieces = _response_pieces(parts, kinds)
    else:
        raise _Unknown(kind)
    return Prepared(tuple((tool, stamp, piece) for tool, stamp, piece in pieces if piece is not None), tools)


_Keyed = tuple[str | None, str | None, Piece | None]
"""A part's piece with its tool and `ui_visibility` stamp (`None`, `None` for a part of no tool)."""


def _request_pieces(parts: list[dict[str, object]], kinds: list[str], markers: list[bool]) -> Iterator[_Keyed]:
    for part, kind, marker in zip(parts, kinds, markers, strict=True):
        if marker:
            continue
        if kind == 'user-prompt':
            if not _is_receipt(part):
                yield None, None, _text_piece('User: ', _user_text(part['content']), TEXT_LIMIT)
        elif kind == 'system-prompt':
            content = _str(part.get('content'))
            if not content.startswith(HARNESS_LEGACY_SUMMARY_PREFIX):
                yield None, None, _text_piece('System: ', content, SHORT_LIMIT)
        elif kind == 'tool-return':
            yield _return_piece(part)
        elif kind == 'compaction':
            if not _is_summary_artifact(part):
                yield None, None, _text_piece('Summary: ', _optional_str(part.get('content')) or '', TEXT_LIMIT)
        elif kind == 'speech':
            yield None, None, _speech_piece(part)
        elif kind == 'retry-feedback':
            yield None, None, _text_piece('Retry: ', retry_text(_str(part.get('content'))), TEXT_LIMIT)
        elif kind == 'instruction-delta':
            yield None, None, _instruction_piece(part)
        elif kind == CAPABILITY_PART_KIND:
            yield result_tool(part), None, capability_piece(part, ())
        elif kind not in QUIET_REQUEST_KINDS:
            yield None, None, _unknown_piece(kind, part)


def _response_pieces(parts: list[dict[str, object]], kinds: list[str]) -> Iterator[_Keyed]:
    for part, kind in zip(parts, kinds, strict=True):
        if kind == 'text':
            yield None, None, _text_piece('Assistant: ', _str(part.get('content')), TEXT_LIMIT)
        elif kind == 'tool-call':
            yield _call_piece(part)
        elif kind == 'speech':
            yield None, None, _speech_piece(part)
        elif kind not in QUIET_RESPONSE_KINDS:
            yield None, None, _unknown_piece(kind, part)


def _unknown_piece(kind: str, part: dict[str, object]) -> Piece | None:
    """A part kind neither pydantic-ai's known shapes here nor display knows: shown generically.

    A kind pydantic-ai itself knows but this fast path does not (a legacy retry part) still goes
    through pydantic-ai, so both paths agree; the rest (a later release's kinds) are rendered from
    their JSON, exactly as the object path renders them.
    """
    if kind == 'retry-prompt':
        raise _Unknown(kind)
    return unknown_piece(kind, part)


def _text_piece(label: str, text: str, limit: int) -> Piece | None:
    return Piece(text, label, text, limit) if text.strip() else None


def _user_text(content: object) -> str:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for item in _list(content):
        if isinstance(item, str):
            texts.append(item)
            continue
        kind = _dict(item).get('kind')
        if kind in _TEXT_ITEM_KINDS:
            texts.append(_str(_dict(item).get('content')))
        elif kind not in _USER_ITEM_KINDS:
            raise _Unknown(kind)
    return ' '.join(texts)


def _text_items(part: dict[str, object]) -> Iterator[dict[str, object]]:
    """A user prompt's `TextContent` items (none for a string prompt)."""
    content = part.get('content')
    if isinstance(content, list):
        for item in cast(list[object], content):
            if isinstance(item, dict) and cast(dict[str, object], item).get('kind') in _TEXT_ITEM_KINDS:
                yield cast(dict[str, object], item)


def _is_marker(part: dict[str, object], kind: str) -> bool:
    """`is_marker_part`: the first text item whose metadata holds the marker key decides."""
    if kind != 'user-prompt':
        return False
    for item in _text_items(part):
        metadata = item.get('metadata')
        if isinstance(metadata, dict) and COMPACTION_MARKER_KEY in metadata:
            return cast(dict[str, object], metadata)[COMPACTION_MARKER_KEY] is not None
    return False


def _is_receipt(part: dict[str, object]) -> bool:
    return any(item.get('metadata') == HARNESS_RECEIPT_TAG for item in _text_items(part))


def _is_summary_artifact(part: dict[str, object]) -> bool:
    metadata = part.get('metadata')
    return (
        isinstance(metadata, dict)
        and cast(dict[str, object], metadata).get(HARNESS_SUMMARY_KEY) is True
        and part.get('provider_name') is None
        and part.get('id') is None
        and part.get('provider_details') is None
        and bool(part.get('content'))
    )


def _instruction_piece(part: dict[str, object]) -> Piece | None:
    if part.get('id') is not None:
        raise _Unknown('instruction id')  # an `InstructionId`, whose text pydantic-ai makes
    content = _optional_str(part.get('content'))
    if content is None:
        return Piece('', 'Instructions withdrawn', '', SHORT_LIMIT)
    return _text_piece('Instructions: ', content, SHORT_LIMIT)


def _speech_piece(part: dict[str, object]) -> Piece | None:
    speaker = _str(part.get('speaker'))
    return _text_piece(f'Speech [{speaker}]: ', _optional_str(part.get('transcript')) or '', TEXT_LIMIT)


def _stamp(part: dict[str, object]) -> str | None:
    """A tool part's `ui_visibility` stamp; a value pydantic-ai would not load goes through pydantic-ai."""
    stamp = part.get('ui_visibility')
    if stamp is not None and stamp not in _VISIBILITIES:
        raise _Unknown('ui_visibility')
    return cast(str | None, stamp)


def _return_piece(part: dict[str, object]) -> _Keyed:
    tool_name = _str(part.get('tool_name'))
    outcome = part.get('outcome', 'success')
    if part.get('tool_kind') is not None or outcome not in _OUTCOMES or 'content' not in part:
        raise _Unknown('tool return')  # a typed part, or not one pydantic-ai would load
    content = part['content']
    _check_plain(content)
    return tool_name, _stamp(part), return_piece(tool_name, cast(str, outcome), content)


def _check_plain(value: object) -> None:
    """Refuse content holding an object with a `kind`: validation may make it a media object."""
    if isinstance(value, dict):
        mapping = cast(dict[str, object], value)
        if 'kind' in mapping:
            raise _Unknown('kind')
        for item in mapping.values():
            _check_plain(item)
    elif isinstance(value, list):
        for item in cast(list[object], value):
            _check_plain(item)


def _call_piece(part: dict[str, object]) -> _Keyed:
    tool_name = _str(part.get('tool_name'))
    if part.get('tool_kind') is not None:
        raise _Unknown('tool call')  # a typed part
    args = _args_as_dict(part.get('args'))
    piece = Piece('', f'Tool call {tool_name}(', to_json(args) if args else '', SHORT_LIMIT, ')')
    return tool_name, _stamp(part), piece


def _args_as_dict(args: object) -> dict[str, object]:
    """As pydantic-ai's `ToolCallPart.args_as_dict`: a dict as is, JSON text parsed, anything else empty."""
    if not args:
        return {}
    if isinstance(args, dict):
        return cast(dict[str, object], args)
    import pydantic_core

    text = _str(args)
    try:
        parsed = pydantic_core.from_json(text)
    except ValueError:
        return {_INVALID_JSON_KEY: text}
    return cast(dict[str, object], parsed) if isinstance(parsed, dict) else {_INVALID_JSON_KEY: text}


def _dict(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _Unknown(type(value).__name__)
    return cast(dict[str, object], value)


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise _Unknown(type(value).__name__)
    return cast(list[object], value)


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise _Unknown(type(value).__name__)
    return value


def _optional_str(value: object) -> str | None:
    return None if value is None else _str(value)
