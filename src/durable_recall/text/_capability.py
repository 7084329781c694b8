"""Capability parts (pydantic-ai 2.78's `CapabilityPart`) and part kinds this version does not know.

A capability part is something a capability or the application told the model mid-conversation:
a background tool's result, a sub-agent's report, a memory snapshot (`DataCapabilityPart`), or an
instruction in the application's voice (`InstructionCapabilityPart`). The model is shown its
`model_content()` (and a data part's declared attributes), so that is what is indexed; display
labels it with its voice, its `kind` and where it came from, so an excerpt says who wrote it:
`Data [jobs.report, tool build]: ...`.

Left out of both:

* request-scoped parts (`scope='request'`): they applied to one request only, so they are not
  standing content of the conversation;
* parts of our own kinds (namespace `durable_recall`): they repeat what the record already holds
  (a recall excerpt), and indexing them would make every recalled fact match twice (self-echo);
* parts whose source is a tool result of a skipped tool (the search tool): the same echo.

A part kind this version does not know at all (a later pydantic-ai's) is not dropped: its text
fields are indexed and it is shown as `Part [kind]: ...`, so a future release never makes a
conversation's content unsearchable. Identifiers, timestamps and provider bookkeeping are not text.

The same functions serve a part object and a stored part's JSON (`Mapping`), so the stored-body
fast path and the object path agree by construction.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import cast

__all__ = (
    'CAPABILITY_PART_KIND',
    'OWN_NAMESPACE',
    'QUIET_REQUEST_KINDS',
    'QUIET_RESPONSE_KINDS',
    'capability_fields',
    'content_text',
    'generic_text',
    'result_tool',
    'source_label',
)

CAPABILITY_PART_KIND = 'capability'
"""The `part_kind` every capability part has, whatever its `kind`."""

OWN_NAMESPACE = 'durable_recall'
"""The namespace of the capability part kinds this library writes (recall excerpts): never indexed."""

QUIET_REQUEST_KINDS = frozenset(
    {'instruction-baseline', 'tool-availability-delta', 'capability-load-delta', 'model-settings-delta'}
)
"""Request part kinds display and index leave out on purpose: configuration records, not conversation."""

QUIET_RESPONSE_KINDS = frozenset({'thinking', 'file', 'compaction', 'builtin-tool-call', 'builtin-tool-return'})
"""Response part kinds left out on purpose: reasoning, files, a provider's compaction, native tool traffic."""

_NOT_TEXT_KEYS = frozenset(
    {
        'part_kind',
        'kind',
        'id',
        'timestamp',
        'metadata',
        'signature',
        'record_id',
        'provider_name',
        'provider_details',
        'provider_response_id',
        'media_type',
        'identifier',
        'data',
        'url',
        'vendor_metadata',
    }
)
"""Fields of an unknown part that are never its text: identifiers, stamps and provider bookkeeping."""


def source_label(source: object) -> str:
    """Where a capability part's content came from, in a few words (`tool build`, `file notes.md`).

    Reads attributes of a source object or keys of its stored JSON alike.
    """
    kind = _get(source, 'source_kind')
    if kind == 'tool-result':
        return f'tool {_get(source, "tool_name")}'
    if kind == 'workspace':
        return f'file {_get(source, "path")}'
    if kind == 'model':
        return f'model {_get(source, "author")}'
    if kind == 'capability':
        return f'capability {_get(source, "capability_id")}'
    return str(kind) if kind is not None else 'unknown source'


def capability_fields(part: object, skip_tools: Collection[str]) -> tuple[str, str, object, tuple[str, ...]] | None:
    """A capability part's label, voice, content and attribute values; `None` when it is left out.

    Args:
        part: A `CapabilityPart` (any subclass, `UnknownCapabilityPart` included) or its stored JSON.
        skip_tools: Tools whose results are never indexed: a part carrying one's result is left out.
    """
    if _get(part, 'scope') == 'request':
        return None
    kind = str(_get(part, 'kind') or '')
    if kind.split('.', 1)[0] == OWN_NAMESPACE:
        return None
    source = _get(part, 'source')
    if _get(source, 'source_kind') == 'tool-result' and _get(source, 'tool_name') in skip_tools:
        return None
    rendering = _get(part, 'rendering')
    voice = 'Instructions' if _get(rendering, 'voice') == 'instruction' else 'Data'
    label = f'{voice} [{kind}, {source_label(source)}]: '
    attributes = tuple(
        str(value)
        for name in cast(Collection[str], _get(rendering, 'attributes') or ())
        if (value := _attribute(part, name)) is not None
    )
    return label, voice, _get(part, 'content'), attributes


_TEXT_ITEM_KINDS = frozenset({'text-content', 'structured-content'})


def content_text(content: object) -> str:
    """The text of a capability part's content: a string, a text item, or the text items of a list.

    Media items are skipped, the text next to them kept, as for a user prompt. Works on objects
    (`TextContent`, `StructuredContent`) and on their stored JSON.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        return ' '.join(text for item in cast(list[object], content) if (text := content_text(item)))
    if isinstance(content, Mapping):
        item = cast(Mapping[str, object], content)
        text = item.get('content')
        return text if item.get('kind') in _TEXT_ITEM_KINDS and isinstance(text, str) else ''
    from . import _parts

    return content.content if isinstance(content, _parts.TextContent) else ''


def result_tool(part: object) -> str | None:
    """The tool a capability part carries a result of (its `ToolResultSource`), if any."""
    source = _get(part, 'source')
    if _get(source, 'source_kind') != 'tool-result':
        return None
    tool = _get(source, 'tool_name')
    return tool if isinstance(tool, str) else None


def generic_text(fields: Mapping[str, object]) -> str:
    """The text of a part this version does not know: its string values, identifiers left out."""
    return '\n'.join(text for key, value in fields.items() if key not in _NOT_TEXT_KEYS for text in _strings(value))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, Mapping):
        for key, item in cast(Mapping[str, object], value).items():
            if key not in _NOT_TEXT_KEYS:
                yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in cast(list[object], value):
            yield from _strings(item)


def _attribute(part: object, name: str) -> object:
    value = _get(part, name)
    if value is None:  # an `UnknownCapabilityPart` keeps its typed fields in `data`
        value = _get(_get(part, 'data'), name)
    return value


def _get(holder: object, name: str) -> object:
    if isinstance(holder, Mapping):
        return cast(Mapping[str, object], holder).get(name)
    return getattr(holder, name, None)
