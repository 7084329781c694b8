"""Records and entries as the SQL conversation stores keep them, and back: shared by SQLite and Postgres.

A record is a row of columns (what is filtered, sorted or joined on) plus JSON columns for what
pydantic-ai carries opaquely (usage, deferred tool requests, the app's metadata); the title is a
plain text column, so an update can compare it in its `WHERE` (see `encode_details`). The branches
it left are rows of their own, so deletes can walk them in SQL. An entry is its id, its parent, its
kind and one message body: pydantic-ai's own JSON for the message, compressed with the step store's
dictionary when that is smaller (`durable_recall.base.encode_body`), always as bytes, so both
dialects use one binary column.

Every entry also carries a *lineage*: the id of the first entry of its chain (the one with no
parent). Entries only ever point at older entries, so all entries reachable from a record share a
lineage with its head or one of its branches; a delete only has to look at the lineages the deleted
record touched (see the stores' `delete_record`).

A row that does not decode raises [`CorruptConversationError`][durable_recall.errors.CorruptConversationError]
naming the conversation or entry; nothing is guessed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import RunUsage

from ..base import MessageDecodeError, decode_body, dump_messages, encode_body, load_messages, parse_timestamp
from ._api import RECORD_HAS_DETAILS, ConversationEntry, ConversationRecord
from ._errors import CorruptConversationError

__all__ = (
    'DETAIL_KEYS',
    'FORMAT_VERSION',
    'EntryRow',
    'RecordRow',
    'decode_entry',
    'decode_record',
    'encode_details',
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

RecordRow = tuple[
    str,
    str | None,
    str | None,
    str | None,
    str,
    datetime,
    str | None,
    str | None,
    str,
    str | None,
    int,
    str | None,
    str | None,
]
"""`(conversation_id, scope, head_id, head_lineage, revision, updated_at, forked_from, forked_at, usage,
deferred, format_version, title, metadata)`, in the order of the records table's columns (`title` and
`metadata` since conversation schema version 5)."""

DETAIL_KEYS = ('title', 'metadata')
"""The `ConversationDetails` keys the SQL stores keep, each in the records column of that name."""


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
    details = encode_details({key: getattr(record, key, None) for key in DETAIL_KEYS})
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
        details['title'],
        details['metadata'],
    )


def encode_details(details: Mapping[str, Any]) -> dict[str, str | None]:
    """The column values of a `ConversationDetails` (only its keys): the title as is, metadata as canonical JSON.

    Metadata is written with sorted keys and no spaces, so two equal dicts are one text and a
    compare-and-set on it (`expected={'metadata': ...}`) is a plain `=` in SQL.

    Raises:
        NotImplementedError: A key the stores do not keep (as `ConversationStore.write_details` says).
        UserError: The title is not a string, or the metadata is not a JSON object of JSON values
            (it would not read back as it was written).
    """
    out: dict[str, str | None] = {}
    for key, value in details.items():
        if key not in DETAIL_KEYS:
            raise NotImplementedError(f'the SQL conversation stores keep no conversation detail {key!r}')
        if value is None:
            out[key] = None
        elif key == 'title':
            if not isinstance(value, str):
                raise UserError(f'A conversation title must be a string or None, got {value!r}.')
            out[key] = value
        else:
            out[key] = _metadata_json(value)
    return out


def _metadata_json(metadata: Any) -> str:
    if not isinstance(metadata, dict):
        raise UserError(f'Conversation metadata must be a dict or None, got {metadata!r}.')
    try:
        text = json.dumps(metadata, sort_keys=True, separators=(',', ':'), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise UserError(f'Conversation metadata must hold only JSON values ({error}): {metadata!r}.') from error
    if json.loads(text) != metadata:
        raise UserError(f'Conversation metadata must read back as written (string keys, JSON values): {metadata!r}.')
    return text


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
        metadata = None if row[12] is None else json.loads(row[12])
    except (ValidationError, ValueError) as error:
        reason = ' '.join(str(error).split())
        raise CorruptConversationError(conversation_id=conversation_id, reason=reason) from error
    if row[10] != FORMAT_VERSION:
        raise CorruptConversationError(
            conversation_id=conversation_id,
            reason=f'format version {row[10]!r}, but this release reads version {FORMAT_VERSION}',
        )
    details: dict[str, Any] = {'title': row[11], 'metadata': metadata} if RECORD_HAS_DETAILS else {}
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
        **details,
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
