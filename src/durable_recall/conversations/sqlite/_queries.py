"""The SQLite conversation store's statements, as functions over a connection the caller holds.

Writes run inside `BEGIN IMMEDIATE`, which takes the file's write lock before the first read: two
processes saving one conversation queue on it, and the second reads the revision the first wrote.
That read-then-write under one lock is the revision check (see `write_record`). A save never writes
a record's `title` or `metadata` once it is stored: only `write_details` does, as one conditional
`UPDATE` (see there).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from ...base import format_timestamp
from ...stores.sqlite import chunked, marks, transaction
from .._api import ConversationConflict, ConversationEntry, ConversationRecord
from .._rows import encode_details, encode_entry, encode_record, entry_lineages
from ._entry_log import forget_index

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationDetails

__all__ = (
    'RECORD_COLUMNS',
    'delete_record',
    'history_rows',
    'record_rows',
    'write_details',
    'write_record',
)

RECORD_COLUMNS = (
    'conversation_id, scope, head_id, head_lineage, revision, updated_at, forked_from, forked_at, usage, deferred,'
    ' format_version, title, metadata'
)

_HISTORY = (
    'WITH RECURSIVE chain (entry_id, parent_id, kind, body, depth) AS ('
    ' SELECT entry_id, parent_id, kind, body, 1 FROM drc_entries WHERE entry_id = ?'
    ' UNION ALL'
    ' SELECT e.entry_id, e.parent_id, e.kind, e.body, c.depth + 1'
    ' FROM drc_entries AS e JOIN chain AS c ON e.entry_id = c.parent_id WHERE c.depth < ?'
    ') SELECT entry_id, parent_id, kind, body FROM chain ORDER BY depth DESC'
)
"""A history in one query: from the head up its parents, at most `limit` deep, oldest first."""

_RELEASE = (
    'WITH RECURSIVE roots (entry_id) AS ('
    ' SELECT head_id FROM drc_records WHERE head_lineage = :lineage'
    ' UNION SELECT entry_id FROM drc_branches WHERE lineage = :lineage'
    '), live (entry_id) AS ('
    ' SELECT entry_id FROM roots'
    ' UNION SELECT e.parent_id FROM drc_entries AS e JOIN live ON e.entry_id = live.entry_id'
    ' WHERE e.parent_id IS NOT NULL'
    ') DELETE FROM drc_entries WHERE lineage = :lineage AND entry_id NOT IN (SELECT entry_id FROM live)'
)
"""Delete a lineage's entries that no remaining record's head or branch reaches.

`UNION` (not `UNION ALL`) stops the walk at entries already reached, so shared ancestors are
visited once however many heads and branches reach them.
"""


def record_rows(
    conn: sqlite3.Connection,
    conversation_id: str | None,
    *,
    scope: str | None = None,
    limit: int | None = None,
    within: bool = False,
) -> list[tuple[tuple[Any, ...], list[str]]]:
    """Record rows with their branch tips: one conversation's, or the newest ones (in `scope`).

    With `within`, inside the caller's transaction; otherwise in a read transaction of its own.
    """
    with nullcontext() if within else transaction(conn, 'BEGIN'):
        if conversation_id is not None:
            rows = conn.execute(
                f'SELECT {RECORD_COLUMNS} FROM drc_records WHERE conversation_id = ?', (conversation_id,)
            ).fetchall()
        else:
            where = '' if scope is None else ' WHERE scope = ?'
            params: list[Any] = [] if scope is None else [scope]
            rows = conn.execute(
                f'SELECT {RECORD_COLUMNS} FROM drc_records{where}'
                ' ORDER BY updated_at DESC, conversation_id DESC LIMIT ?',
                (*params, -1 if limit is None else limit),
            ).fetchall()
        branches: dict[str, list[str]] = {row[0]: [] for row in rows}
        for chunk in chunked(branches):
            for cid, entry_id in conn.execute(
                f'SELECT conversation_id, entry_id FROM drc_branches WHERE conversation_id IN ({marks(chunk)})'
                ' ORDER BY conversation_id, position',
                chunk,
            ):
                branches[cid].append(entry_id)
    return [(tuple(row), branches[row[0]]) for row in rows]


def history_rows(conn: sqlite3.Connection, head_id: str, limit: int | None) -> list[tuple[Any, ...]]:
    """The entry rows from the first up to `head_id` (or its last `limit`), oldest first."""
    return [tuple(row) for row in conn.execute(_HISTORY, (head_id, 2**62 if limit is None else limit))]


def write_record(
    conn: sqlite3.Connection,
    record: ConversationRecord,
    new_entries: Sequence[ConversationEntry],
    expected_revision: str | None,
) -> None:
    """Store `record` and its new entries in one transaction, if the stored revision is `expected_revision`.

    Raises:
        ConversationConflict: The stored revision differs, or the head, a branch or a new entry's
            parent names an entry the store no longer has (a concurrent delete released it).
    """
    cid = record.conversation_id
    with transaction(conn, 'BEGIN IMMEDIATE'):
        stored = conn.execute('SELECT revision FROM drc_records WHERE conversation_id = ?', (cid,)).fetchone()
        if (None if stored is None else stored[0]) != expected_revision:
            raise ConversationConflict(cid)
        new_ids = {entry.id for entry in new_entries}
        wanted = {
            *(entry.parent_id for entry in new_entries if entry.parent_id is not None),
            *record.branches,
            *([record.head_id] if record.head_id is not None else []),
        } - new_ids
        known = _lineages(conn, sorted(wanted))
        lineages = entry_lineages(new_entries, known)
        if lineages is None or not wanted <= known.keys():
            raise ConversationConflict(cid)
        known.update((entry.id, lineage) for entry, lineage in zip(new_entries, lineages, strict=True))
        conn.executemany(
            'INSERT INTO drc_entries (entry_id, parent_id, lineage, kind, body) VALUES (?, ?, ?, ?, ?)',
            [encode_entry(entry, lineage) for entry, lineage in zip(new_entries, lineages, strict=True)],
        )
        row = list(encode_record(record, None if record.head_id is None else known[record.head_id]))
        row[5] = format_timestamp(record.updated_at)
        if expected_revision is None:
            conn.execute(f'INSERT INTO drc_records ({RECORD_COLUMNS}) VALUES ({", ".join("?" * len(row))})', row)
        else:
            conn.execute(
                'UPDATE drc_records SET scope = ?, head_id = ?, head_lineage = ?, revision = ?, updated_at = ?,'
                ' forked_from = ?, forked_at = ?, usage = ?, deferred = ?, format_version = ?'
                ' WHERE conversation_id = ? AND revision = ?',
                (*row[1:11], cid, expected_revision),  # not title nor metadata: `write_details` owns them
            )
        conn.execute('DELETE FROM drc_branches WHERE conversation_id = ?', (cid,))
        conn.executemany(
            'INSERT INTO drc_branches (conversation_id, position, entry_id, lineage) VALUES (?, ?, ?, ?)',
            [(cid, position, tip, known[tip]) for position, tip in enumerate(record.branches)],
        )


def write_details(
    conn: sqlite3.Connection,
    conversation_id: str,
    details: ConversationDetails,
    expected_revision: str,
    expected: ConversationDetails | None,
) -> tuple[tuple[Any, ...], list[str]]:
    """Write the `details` columns in one `UPDATE ... WHERE revision = ? AND <column> IS ?`; the row after it.

    The condition and the write are one statement under the file's write lock, so of two processes
    setting a title `expected` to be unset, exactly one matches.

    Raises:
        ConversationConflict: No record with `expected_revision` and the `expected` values is stored.
        NotImplementedError: A key the store does not keep.
    """
    values = encode_details(details)
    wanted = encode_details(expected or {})
    assignments = ', '.join(f'{column} = ?' for column in values)
    conditions = ''.join(f' AND {column} IS ?' for column in wanted)
    with transaction(conn, 'BEGIN IMMEDIATE'):
        if values:
            changed = conn.execute(
                f'UPDATE drc_records SET {assignments} WHERE conversation_id = ? AND revision = ?{conditions}',
                (*values.values(), conversation_id, expected_revision, *wanted.values()),
            ).rowcount
        else:  # nothing to write: still only answer for the record as expected
            changed = len(
                conn.execute(
                    f'SELECT 1 FROM drc_records WHERE conversation_id = ? AND revision = ?{conditions}',
                    (conversation_id, expected_revision, *wanted.values()),
                ).fetchall()
            )
        if changed != 1:
            raise ConversationConflict(conversation_id)
        ((row, branches),) = record_rows(conn, conversation_id, within=True)
    return row, branches


def delete_record(conn: sqlite3.Connection, conversation_id: str, expected_revision: str) -> None:
    """Delete the record with `expected_revision`, then the entries of its lineages no remaining record reaches.

    Raises:
        ConversationConflict: No record with `expected_revision` is stored.
    """
    with transaction(conn, 'BEGIN IMMEDIATE'):
        stored = conn.execute(
            'SELECT revision, head_lineage FROM drc_records WHERE conversation_id = ?', (conversation_id,)
        ).fetchone()
        if stored is None or stored[0] != expected_revision:
            raise ConversationConflict(conversation_id)
        lineages = {
            stored[1],
            *(
                row[0]
                for row in conn.execute(
                    'SELECT lineage FROM drc_branches WHERE conversation_id = ?', (conversation_id,)
                )
            ),
        } - {None}
        conn.execute('DELETE FROM drc_records WHERE conversation_id = ?', (conversation_id,))
        conn.execute('DELETE FROM drc_branches WHERE conversation_id = ?', (conversation_id,))
        forget_index(conn, conversation_id)  # the search index keeps no trace of it
        for lineage in sorted(lineages):
            conn.execute(_RELEASE, {'lineage': lineage})


def _lineages(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for chunk in chunked(ids):
        query = f'SELECT entry_id, lineage FROM drc_entries WHERE entry_id IN ({marks(chunk)})'
        found.update(conn.execute(query, chunk))
    return found
