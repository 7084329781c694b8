"""Records and entries as the SQL conversation stores keep them, and back: shared by SQLite and Postgres.

A record is a row of columns (what is filtered, sorted or joined on) plus two JSON columns for what
pydantic-ai carries opaquely (usage, deferred tool requests); the branches it left are rows of their
own, so deletes can walk them in SQL. An entry is its id, its parent, its kind and one message body:
pydantic-ai's own JSON for the message, compressed with the step store's dictionary when that is
smaller (`durable_recall.base.encode_body`), always as bytes, so both dialects use one binary column.

Every entry also carries a *lineage*: the id of the first entry of its chain (the one with no
parent). Entries only ever point at older entries, so all entries reachable from a record share a
lineage with its head or one of its branches; a delete only has to look at the lineages the deleted
record touched (see the stores' `delete_record`).

A row that does not decode raises [`CorruptConversationError`][durable_recall.conversations.CorruptConversationError]
naming the conversation or entry; nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import RunUsage

from ..base import MessageDecodeError, decode_body, dump_messages, encode_body, load_messages, parse_timestamp
from ._api import ConversationEntry, ConversationRecord
from ._errors import CorruptConversationError

__all__ = (
    'FORMAT_VERSION',
    'EntryRow',
    'RecordRow',
    'decode_entry',
    'decode_record',
    'encode_entry',
    'encode_record',
    'entry_lineages',
)

FORMAT_VERSION = 1
"""The `ConversationRecord.format_version` this release reads and writes."""

_USAGE: TypeAdapter[RunUsage] = TypeAdapter(RunUsage)
_DEFERRED: TypeAdapter[DeferredToolRequests] = TypeAdapter(DeferredToolRequests)

_TEXT_LEAD = ord('{')
"""An uncompressed body is a JSON object; a compressed one starts with `encode_body`'s tag byte."""

EntryRow = tuple[str, str | None, str, str, bytes]
"""`(entry_id, parent_id, lineage, kind, body)`, in the order of the entries table's columns."""

RecordRow = tuple[str, str | None, str | None, str | None, str, datetime, str | None, str | None, str, str | None, int]
"""`(conversation_id, scope, head_id, head_lineage, revision, updated_at, forked_from, forked_at, usage,
deferred, format_version)`, in the order of the records table's columns."""


def encode_entry(entry: ConversationEntry, lineage: str) -> EntryRow:
    """The row for `entry`, whose chain starts at `lineage`."""
    stored = encode_body(dump_messages([entry.message])[0])
    body = stored.encode('utf-8') if isinstance(stored, str) else stored
    return (entry.id, entry.parent_id, lineage, entry.kind, body)


def decode_entry(entry_id: str, parent_id: str | None, kind: str, body: bytes | memoryview) -> ConversationEntry:
    """The entry a row holds.

    Raises:
        CorruptConversationError: The kind is not one this release knows, or the body is not a message.
    """
    if kind != 'message':
        raise CorruptConversationError(entry_id=entry_id, reason=f'unknown entry kind {kind!r}')
    data = bytes(body)
    try:
        text = data.decode('utf-8') if data[:1] == bytes((_TEXT_LEAD,)) else decode_body(data)
        (message,) = load_messages([text])
    except (MessageDecodeError, UnicodeDecodeError, ValueError) as error:
        raise CorruptConversationError(entry_id=entry_id, reason=str(error)) from error
    return ConversationEntry(id=entry_id, parent_id=parent_id, message=message)


def encode_record(record: ConversationRecord, head_lineage: str | None) -> RecordRow:
    """The row for `record`, whose head's chain starts at `head_lineage`."""
    deferred = record.deferred_tool_requests
    return (
        record.conversation_id,
        record.scope,
        record.head_id,
        head_lineage,
        record.revision,
        record.updated_at,
        record.forked_from,
        record.forked_at,
        _USAGE.dump_json(record.usage).decode(),
        None if deferred is None else _DEFERRED.dump_json(deferred).decode(),
        record.format_version,
    )


def decode_record(row: Sequence[Any], branches: Sequence[str]) -> ConversationRecord:
    """The record a row (in `RecordRow` order) and its branch rows hold.

    `updated_at` may be a datetime (Postgres) or the fixed-width text SQLite keeps.

    Raises:
        CorruptConversationError: A column does not decode, or the row was written in a newer format.
    """
    conversation_id = str(row[0])
    try:
        updated_at = row[5].astimezone(UTC) if isinstance(row[5], datetime) else parse_timestamp(str(row[5]))
        usage = _USAGE.validate_json(row[8])
        deferred = None if row[9] is None else _DEFERRED.validate_json(row[9])
    except (ValidationError, ValueError) as error:
        reason = ' '.join(str(error).split())
        raise CorruptConversationError(conversation_id=conversation_id, reason=reason) from error
    if row[10] != FORMAT_VERSION:
        raise CorruptConversationError(
            conversation_id=conversation_id,
            reason=f'format version {row[10]!r}, but this release reads version {FORMAT_VERSION}',
        )
    return ConversationRecord(
        conversation_id=conversation_id,
        head_id=row[2],
        usage=usage,
        deferred_tool_requests=deferred,
        scope=row[1],
        forked_from=row[6],
        forked_at=row[7],
        branches=list(branches),
        revision=row[4],
        updated_at=updated_at,
    )


def entry_lineages(new_entries: Sequence[ConversationEntry], stored: Mapping[str, str]) -> list[str] | None:
    """Each new entry's lineage, or `None` if one's parent is neither new nor in `stored` (id -> lineage).

    A missing parent means a concurrent delete released the history the entries continue.
    """
    known = dict(stored)
    out: list[str] = []
    for entry in new_entries:
        if entry.parent_id is None:
            lineage = entry.id
        else:
            found = known.get(entry.parent_id)
            if found is None:
                return None
            lineage = found
        known[entry.id] = lineage
        out.append(lineage)
    return out
