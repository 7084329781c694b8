"""How one snapshot's messages are matched to the previous snapshot's: anchors, edits, extensions.

These are the comparisons behind the rebuild rule (see `_rebuild`), kept apart from the builder's
bookkeeping so each can be read, and changed, on its own: an anchor is an equal content hash, an
edit keeps a message's identity, and an extension is an edit that only appended parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

from ._hash import RECORD_PART_KINDS, canonical_form

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('Seen', 'anchors', 'extends', 'is_edit_of', 'same', 'same_head')


@dataclass(eq=False)
class Seen:
    """One message of the last folded snapshot."""

    message: ModelMessage
    digest: str
    body_position: int
    seq: int = -1
    record_index: int | None = None
    _identity: frozenset[tuple[str, object]] | None = field(default=None, repr=False)

    @property
    def identity(self) -> frozenset[tuple[str, object]]:
        if self._identity is None:
            self._identity = _identity(self.message)
        return self._identity


def anchors(previous: list[str], current: list[str]) -> list[tuple[int, int]]:
    """Matched `(previous, current)` positions, increasing in both, with equal hashes."""
    if current[: len(previous)] == previous:
        return [(index, index) for index in range(len(previous))]
    matcher = SequenceMatcher(None, previous, current, autojunk=False)
    return [(a + k, b + k) for a, b, size in matcher.get_matching_blocks() for k in range(size)]


def _identity(message: ModelMessage) -> frozenset[tuple[str, object]]:
    """What an in-place edit of the message keeps and a separately created message does not share."""
    if message.kind == 'response':
        marks: set[tuple[str, object]] = {('response-at', message.timestamp)}
        if message.provider_response_id:
            marks.add(('response-id', message.provider_response_id))
        return frozenset(marks)
    marks = set()
    for part in message.parts:
        if part.part_kind in RECORD_PART_KINDS:
            continue
        call_id: object = getattr(part, 'tool_call_id', None)
        if isinstance(call_id, str) and call_id:
            marks.add(('call', call_id))
        created: object = getattr(part, 'timestamp', None)
        if isinstance(created, datetime):
            marks.add(('part-at', created))
    return frozenset(marks)


def is_edit_of(new: Seen, old: Seen) -> bool:
    """Whether `new` is `old` edited in place: the same kind of message, keeping some of its identity."""
    return type(new.message) is type(old.message) and not new.identity.isdisjoint(old.identity)


def extends(new: ModelMessage, old: ModelMessage) -> bool:
    """Whether `new` is `old` with parts appended (its parts start with all of `old`'s)."""
    old_parts = canonical_form(old)['parts']
    new_parts = canonical_form(new)['parts']
    return len(new_parts) > len(old_parts) and new_parts[: len(old_parts)] == old_parts


def same(a: ModelMessage, b: ModelMessage) -> bool:
    """Equal as dataclasses (so equal hashes); a content type with odd equality just counts as different."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def same_head(previous: Sequence[Seen], current: Sequence[Seen]) -> bool:
    """Whether both snapshots open with the same message (a head a sliding window preserved)."""
    return (
        bool(previous)
        and bool(current)
        and previous[0].body_position == 0
        and current[0].body_position == 0
        and previous[0].digest == current[0].digest
    )
