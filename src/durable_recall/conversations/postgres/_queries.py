"""The Postgres conversation store's statements, as coroutines over a cursor inside the caller's transaction.

Transactions are read committed. The revision check is a conditional write: `UPDATE ... WHERE
revision = expected` (or `INSERT ... ON CONFLICT DO NOTHING` for a new conversation) on the record's
row. Of two transactions saving one conversation from one revision, the second waits on the row lock
the first holds, then re-evaluates its condition against the committed row, matches nothing, and
raises `ConversationConflict`, rolling back the entries it inserted.

Deletes release entries, so they must not race a save or fork that is about to point at them. Both
take a transaction-scoped advisory lock per lineage (see `_rows`) they touch, in sorted order: saves
shared (saves of one lineage never wait on each other), deletes exclusive. A save checks that the
entries it points at exist only once it holds its locks.

A save never writes a stored record's `title` or `metadata`: `write_details` does, in one
`UPDATE ... WHERE revision = %s AND title IS NOT DISTINCT FROM %s`, whose condition the second of
two concurrent updates re-evaluates against the first's committed row, as a save's does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, LiteralString

from .._api import ConversationConflict, ConversationEntry, ConversationRecord
from .._rows import encode_details, encode_entry, encode_record, entry_lineages
from ._entry_log import forget_index
from ._tables import lock_key

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow
    from pydantic_ai.conversation_store import ConversationDetails

    from ...stores.postgres import PostgresConnector

__all__ = ('HISTORY', 'RECORDS', 'delete_record', 'write_details', 'write_record')

_COLUMNS: LiteralString = (
    'conversation_id, scope, head_id, head_lineage, revision, updated_at, forked_from, forked_at, usage, deferred,'
    ' format_version, title, metadata'
)

RECORDS: LiteralString = (
    'SELECT r.conversation_id, r.scope, r.head_id, r.head_lineage, r.revision, r.updated_at, r.forked_from,'
    ' r.forked_at, r.usage, r.deferred, r.format_version, r.title, r.metadata,'
    ' ARRAY(SELECT b.entry_id FROM {branches} AS b WHERE b.conversation_id = r.conversation_id ORDER BY b.position)'
    ' FROM {records} AS r'
)
"""Records with their branch tips, in one statement, so both come from one committed state."""

HISTORY: LiteralString = (
    'WITH RECURSIVE chain (entry_id, parent_id, kind, body, depth) AS ('
    ' SELECT entry_id, parent_id, kind, body, 1 FROM {entries} WHERE entry_id = %s'
    ' UNION ALL'
    ' SELECT e.entry_id, e.parent_id, e.kind, e.body, c.depth + 1'
    ' FROM {entries} AS e JOIN chain AS c ON e.entry_id = c.parent_id WHERE c.depth < %s'
    ') SELECT entry_id, parent_id, kind, body FROM chain ORDER BY depth DESC'
)
"""A history in one query: from the head up its parents, at most `limit` deep, oldest first."""

_RELEASE: LiteralString = (
    'WITH RECURSIVE roots (entry_id) AS ('
    ' SELECT head_id FROM {records} WHERE head_lineage = %(lineage)s'
    ' UNION SELECT entry_id FROM {branches} WHERE lineage = %(lineage)s'
    '), live (entry_id) AS ('
    ' SELECT entry_id FROM roots'
    ' UNION SELECT e.parent_id FROM {entries} AS e JOIN live ON e.entry_id = live.entry_id'
    ' WHERE e.parent_id IS NOT NULL'
    ') DELETE FROM {entries} WHERE lineage = %(lineage)s AND entry_id NOT IN (SELECT entry_id FROM live)'
)
"""Delete a lineage's entries that no remaining record's head or branch reaches."""


async def write_record(
    db: PostgresConnector,
    cur: AsyncCursor[TupleRow],
    record: ConversationRecord,
    new_entries: Sequence[ConversationEntry],
    expected_revision: str | None,
) -> None:
    """Store `record` and its new entries, if the stored revision is `expected_revision`.

    Raises:
        ConversationConflict: The stored revision differs, or the head, a branch or a new entry's
            parent names an entry the store no longer has (a concurrent delete released it).
    """
    cid = record.conversation_id
    new_ids = {entry.id for entry in new_entries}
    wanted = {
        *(entry.parent_id for entry in new_entries if entry.parent_id is not None),
        *record.branches,
        *([record.head_id] if record.head_id is not None else []),
    } - new_ids
    known = await _lineages(db, cur, wanted)
    await _lock(db, cur, known.values(), shared=True)
    known = await _lineages(db, cur, wanted)  # again, under the locks: a delete may have released some
    lineages = entry_lineages(new_entries, known)
    if lineages is None or not wanted <= known.keys():
        raise ConversationConflict(cid)
    known.update((entry.id, lineage) for entry, lineage in zip(new_entries, lineages, strict=True))
    row = encode_record(record, None if record.head_id is None else known[record.head_id])
    if expected_revision is None:
        await cur.execute(
            db.sql(
                f'INSERT INTO {{records}} ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)'
                ' ON CONFLICT (conversation_id) DO NOTHING'
            ),
            row,
        )
    else:
        await cur.execute(
            db.sql(
                'UPDATE {records} SET scope = %s, head_id = %s, head_lineage = %s, revision = %s, updated_at = %s,'
                ' forked_from = %s, forked_at = %s, usage = %s, deferred = %s, format_version = %s'
                ' WHERE conversation_id = %s AND revision = %s'
            ),
            (*row[1:11], cid, expected_revision),  # not title nor metadata: `write_details` owns them
        )
    if cur.rowcount != 1:
        raise ConversationConflict(cid)
    if new_entries:
        await cur.executemany(
            db.sql('INSERT INTO {entries} (entry_id, parent_id, lineage, kind, body) VALUES (%s, %s, %s, %s, %s)'),
            [encode_entry(entry, lineage) for entry, lineage in zip(new_entries, lineages, strict=True)],
        )
    await cur.execute(db.sql('DELETE FROM {branches} WHERE conversation_id = %s'), (cid,))
    if record.branches:
        await cur.executemany(
            db.sql('INSERT INTO {branches} (conversation_id, position, entry_id, lineage) VALUES (%s, %s, %s, %s)'),
            [(cid, position, tip, known[tip]) for position, tip in enumerate(record.branches)],
        )


_SET: dict[str, LiteralString] = {'title': 'title = %s', 'metadata': 'metadata = %s'}
_EXPECT: dict[str, LiteralString] = {
    'title': ' AND title IS NOT DISTINCT FROM %s',
    'metadata': ' AND metadata IS NOT DISTINCT FROM %s',
}
"""The SQL of each detail `encode_details` knows (it refuses any other key first)."""


async def write_details(
    db: PostgresConnector,
    cur: AsyncCursor[TupleRow],
    conversation_id: str,
    details: ConversationDetails,
    expected_revision: str,
    expected: ConversationDetails | None,
) -> list[Any]:
    """Write the `details` columns if the record has `expected_revision` and the `expected` values; its row after.

    Raises:
        ConversationConflict: No such record is stored.
        NotImplementedError: A key the store does not keep.
    """
    values = encode_details(details)
    wanted = encode_details(expected or {})
    conditions = ''.join(_EXPECT[column] for column in wanted)
    if values:
        assignments = ', '.join(_SET[column] for column in values)
        statement = f'UPDATE {{records}} SET {assignments} WHERE conversation_id = %s AND revision = %s{conditions}'
    else:  # nothing to write: still only answer for the record as expected (locked, so it is the one returned)
        statement = f'SELECT 1 FROM {{records}} WHERE conversation_id = %s AND revision = %s{conditions} FOR UPDATE'
    await cur.execute(
        db.sql(statement),
        (*values.values(), conversation_id, expected_revision, *wanted.values()),
    )
    if cur.rowcount != 1:
        raise ConversationConflict(conversation_id)
    # The row stays locked until commit, so the record read back is the one just written.
    await cur.execute(db.sql(RECORDS + ' WHERE r.conversation_id = %s'), (conversation_id,))
    rows: list[Any] = await cur.fetchall()
    return rows


async def delete_record(
    db: PostgresConnector, cur: AsyncCursor[TupleRow], conversation_id: str, expected_revision: str
) -> None:
    """Delete the record with `expected_revision`, then the entries of its lineages no remaining record reaches.

    Raises:
        ConversationConflict: No record with `expected_revision` is stored.
    """
    await cur.execute(
        db.sql(
            'SELECT r.revision, r.head_lineage,'
            ' ARRAY(SELECT b.lineage FROM {branches} AS b WHERE b.conversation_id = r.conversation_id)'
            ' FROM {records} AS r WHERE r.conversation_id = %s'
        ),
        (conversation_id,),
    )
    stored = await cur.fetchone()
    if stored is None or stored[0] != expected_revision:
        raise ConversationConflict(conversation_id)
    lineages: set[str] = {lineage for lineage in (stored[1], *stored[2]) if lineage is not None}
    await _lock(db, cur, lineages, shared=False)
    await cur.execute(
        db.sql('DELETE FROM {records} WHERE conversation_id = %s AND revision = %s'),
        (conversation_id, expected_revision),
    )
    if cur.rowcount != 1:
        raise ConversationConflict(conversation_id)  # saved or deleted while this waited for the locks
    await cur.execute(db.sql('DELETE FROM {branches} WHERE conversation_id = %s'), (conversation_id,))
    await forget_index(cur, db, conversation_id)  # the search index keeps no trace of it
    for lineage in sorted(lineages):
        await cur.execute(db.sql(_RELEASE), {'lineage': lineage})


async def _lineages(db: PostgresConnector, cur: AsyncCursor[TupleRow], ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    await cur.execute(
        db.sql('SELECT entry_id, lineage FROM {entries} WHERE entry_id = ANY(%s::text[])'), (sorted(ids),)
    )
    rows: list[Any] = await cur.fetchall()
    return {row[0]: row[1] for row in rows}


async def _lock(db: PostgresConnector, cur: AsyncCursor[TupleRow], lineages: Iterable[str], *, shared: bool) -> None:
    """Take the lineages' advisory locks one by one in sorted order, so two transactions never deadlock on them."""
    function = 'pg_advisory_xact_lock_shared' if shared else 'pg_advisory_xact_lock'
    for lineage in sorted(set(lineages)):
        await cur.execute(f'SELECT {function}(hashtextextended(%s, 0))', (lock_key(db, lineage),))
