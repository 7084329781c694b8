"""Message parts of a kind the installed pydantic-ai does not define, kept verbatim.

A store outlives the pydantic-ai that wrote it: a worker on a newer release can persist a part
kind an older search worker, the command line or `check` has never heard of. pydantic-ai refuses
such a message as a whole, which would make a healthy run read as damaged and its content
unsearchable. So a body that fails validation *only* because of unknown part kinds is read with
each such part as an `UnrecognizedPart`: a plain dataclass holding the stored fields in their
stored order. It dumps back to the same JSON (so hashes and rewrites keep it verbatim), renders
generically (its text fields are indexed and shown as `Part [kind]`), and is never mistaken for
a part pydantic-ai knows. A body with any other fault is still reported as unreadable.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
import typing
from collections.abc import Sequence
from typing import Any, cast

__all__ = ('has_unrecognized', 'known_part_kinds', 'split_unknown', 'unrecognized_part')


@functools.cache
def known_part_kinds() -> dict[str, frozenset[str]]:
    """The `part_kind`s the installed pydantic-ai defines, by message kind (`request`, `response`)."""
    from pydantic_ai import messages

    return {
        'request': _kinds(messages.ModelRequestPart),
        'response': _kinds(messages.ModelResponsePart),
    }


def unrecognized_part(fields: dict[str, Any]) -> object | None:
    """A part object holding `fields` verbatim, or `None` when they cannot be fields of one."""
    names = tuple(fields)
    if not all(name.isidentifier() and not keyword.iskeyword(name) for name in names):
        return None
    return _part_class(names)(**fields)


@functools.cache
def _part_class(names: tuple[str, ...]) -> type:
    """A frozen dataclass with these fields, in this order (its dump is the stored JSON's)."""
    return dataclasses.make_dataclass(
        'UnrecognizedPart',
        [(name, object) for name in names],
        frozen=True,
        namespace={'__doc__': 'A stored part of a kind the installed pydantic-ai does not define.', _MARK: True},
    )


_MARK = '__durable_recall_unrecognized__'


def has_unrecognized(messages: Sequence[Any]) -> bool:
    """Whether any message holds a part read back as an `UnrecognizedPart`.

    pydantic-ai's serializer warns that such a part is none of the types it expects (and dumps it
    by its fields, as stored): the dump of these messages is made without its warnings.
    """
    return any(getattr(part, _MARK, False) for message in messages for part in message.parts)


def _kinds(alias: object) -> frozenset[str]:
    union = typing.get_args(alias)[0]
    kinds: set[str] = set()
    for member in typing.get_args(union):
        cls = typing.get_args(member)[0] if typing.get_origin(member) is typing.Annotated else member
        default = next((f.default for f in dataclasses.fields(cls) if f.name == 'part_kind'), None)
        if isinstance(default, str):
            kinds.add(default)
    return frozenset(kinds)


def split_unknown(parsed: object) -> tuple[object, list[tuple[int, int, object]]] | None:
    """The messages without their unknown parts, and those parts as objects with their places.

    Returns `None` when there are no unknown parts, or one cannot be held (the caller then reports
    the body as it would have).
    """
    if not isinstance(parsed, list):
        return None
    kinds = known_part_kinds()
    removed: list[tuple[int, int, object]] = []
    kept_messages: list[object] = []
    for index, item in enumerate(cast(list[object], parsed)):
        if not isinstance(item, dict):
            return None
        message = cast(dict[str, object], item)
        known = kinds.get(str(message.get('kind')))
        parts = message.get('parts')
        if known is None or not isinstance(parts, list):
            kept_messages.append(message)
            continue
        kept_parts: list[object] = []
        for position, part in enumerate(cast(list[object], parts)):
            fields = cast(dict[str, Any], part) if isinstance(part, dict) else None
            if fields is not None and fields.get('part_kind') not in known:
                held = unrecognized_part(fields)
                if held is None:
                    return None
                removed.append((index, position, held))
            else:
                kept_parts.append(cast(object, part))
        kept_messages.append({**message, 'parts': kept_parts})
    return (kept_messages, removed) if removed else None
