"""The Postgres conversation store's entry log as the search index reads it (see `_entry_log`).

`advance`, `reset` and the store's delete take the index's advisory lock of the conversation (the
name the index's own commits lock, `durable_recall.index:<schema>:<conversation id>`), so they never
interleave with a catch-up's commit: a commit lands wholly before a reset (which removes it) or after
(and finds its run registered anew, not indexed: it reads again).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, LiteralString

from ...stores.postgres import PostgresConnector
from .._api import ConversationEntry
from .._entry_log import IndexedConversation, LogRun, log_run_row, read_log_run
from .._rows import decode_entry

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

__all__ = ('PostgresEntryLog', 'forget_index')

_LINE: LiteralString = (
    'WITH RECURSIVE chain (entry_id, parent_id, depth) AS ('
    ' SELECT entry_id, parent_id, 1 FROM {entries} WHERE entry_id = %s'
    ' UNION ALL SELECT e.entry_id, e.parent_id, c.depth + 1'
    ' FROM {entries} AS e JOIN chain AS c ON e.entry_id = c.parent_id WHERE c.entry_id <> %s'
    ') SELECT entry_id, parent_id FROM chain ORDER BY depth DESC'
)
"""From a head up its parents until the stop entry (included) or the first entry, oldest first: ids only."""

_RUN_COLUMNS: LiteralString = 'run_id, conversation_id, scope, started_at, metadata, head, skip, token'

_FORGET: LiteralString = (
    'WITH pending AS (DELETE FROM {pending} WHERE conversation_id = %(conv)s),'
    ' scope AS (DELETE FROM {index_scopes} WHERE conversation_id = %(conv)s RETURNING scope_key),'
    ' terms AS (DELETE FROM {index_postings} WHERE scope_key IN (SELECT scope_key FROM scope)),'
    ' groups AS (DELETE FROM {index_groups} WHERE scope_key IN (SELECT scope_key FROM scope)),'
    ' hashes AS (DELETE FROM {index_hashes} WHERE scope_key IN (SELECT scope_key FROM scope)),'
    ' runs AS (DELETE FROM {index_runs} WHERE scope_key IN (SELECT scope_key FROM scope)),'
    ' sources AS (DELETE FROM {runs} WHERE conversation_id = %(conv)s)'
    ' DELETE FROM {index_conversations} WHERE conversation_id = %(conv)s'
)

_BUMP: LiteralString = (
    "INSERT INTO {meta} (key, value) VALUES ('index_generation', %s)"
    ' ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value'
)


class PostgresEntryLog:
    """`EntryLog` over the store's connector; `connector` names the index's `drc_` tables."""

    def __init__(self, connector: PostgresConnector) -> None:
        self.connector = connector

    async def indexed(self, conversation_ids: Sequence[str] | None) -> dict[str, IndexedConversation]:
        db = self.connector
        query: LiteralString = 'SELECT conversation_id, revision, head, depth, tips, timed FROM {index_conversations}'
        async with db.transaction() as cur:
            if conversation_ids is None:
                await cur.execute(db.sql(query))
            else:
                await cur.execute(db.sql(query + ' WHERE conversation_id = ANY(%s::text[])'), (list(conversation_ids),))
            rows = await cur.fetchall()
        return {row[0]: _indexed(row) for row in rows}

    async def line(self, head_id: str) -> list[str]:
        rows = await self._line(head_id, '')
        if not rows or rows[0][1] is not None:
            raise KeyError(rows[0][1] if rows else head_id)
        return [entry_id for entry_id, _ in rows]

    async def walk(self, head_id: str, stop_id: str) -> list[str] | None:
        rows = await self._line(head_id, stop_id)
        if not rows or rows[0][0] != stop_id:
            return None
        return [entry_id for entry_id, _ in rows[1:]]

    async def _line(self, head_id: str, stop_id: str) -> list[tuple[Any, ...]]:
        async with self.connector.transaction() as cur:
            await cur.execute(self.connector.sql(_LINE), (head_id, stop_id))
            return await cur.fetchall()

    async def entries(self, entry_ids: Sequence[str]) -> dict[str, ConversationEntry]:
        db = self.connector
        async with db.transaction() as cur:
            await cur.execute(
                db.sql('SELECT entry_id, parent_id, kind, body FROM {entries} WHERE entry_id = ANY(%s::text[])'),
                (list(dict.fromkeys(entry_ids)),),
            )
            rows = await cur.fetchall()
        return {row[0]: decode_entry(*row) for row in rows}

    async def runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        db = self.connector
        async with db.transaction() as cur:
            await cur.execute(
                db.sql('SELECT ' + _RUN_COLUMNS + ' FROM {runs} WHERE run_id = ANY(%s::text[])'), (list(run_ids),)
            )
            rows = await cur.fetchall()
        return {row[0]: read_log_run(row) for row in rows}

    async def advance(self, conversation_id: str, expected: str, now: IndexedConversation) -> bool:
        db = self.connector
        async with db.transaction() as cur:
            if await _locked_revision(cur, db, conversation_id) != expected:
                return False
            await _put_indexed(cur, db, conversation_id, now)
            await cur.execute(db.sql('UPDATE {runs} SET head = %s WHERE run_id = %s'), (now.head, conversation_id))
            await _mark_pending(cur, db, conversation_id, conversation_id, now.depth)
            return True

    async def reset(
        self, conversation_id: str, expected: str | None, now: IndexedConversation | None, runs: Sequence[LogRun]
    ) -> bool:
        db = self.connector
        async with db.transaction() as cur:
            if await _locked_revision(cur, db, conversation_id) != expected:
                return False
            await forget_index(cur, db, conversation_id, locked=True)
            if now is not None:
                await _put_indexed(cur, db, conversation_id, now)
                await cur.executemany(
                    db.sql('INSERT INTO {runs} (' + _RUN_COLUMNS + ') VALUES (%s, %s, %s, %s, %s, %s, %s, %s)'),
                    [log_run_row(run) for run in runs],
                )
                for run in runs:
                    await _mark_pending(cur, db, conversation_id, run.run_id, run.upto)
            return True


async def lock_index(cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str) -> None:
    """Take the conversation's index lock (the one the index's commits take) until the transaction ends."""
    await cur.execute(
        'SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))',
        (f'durable_recall.index:{db.schema or ""}:{conversation_id}',),
    )


async def forget_index(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str, *, locked: bool = False
) -> None:
    """Delete everything the index holds of a conversation, in the caller's transaction, under its index lock."""
    if not locked:
        await lock_index(cur, db, conversation_id)
    await cur.execute(db.sql(_FORGET), {'conv': conversation_id})
    if cur.rowcount:
        await cur.execute(db.sql(_BUMP), (uuid.uuid4().hex,))


async def _locked_revision(cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str) -> str | None:
    await lock_index(cur, db, conversation_id)
    await cur.execute(
        db.sql('SELECT revision FROM {index_conversations} WHERE conversation_id = %s'), (conversation_id,)
    )
    found = await cur.fetchone()
    return None if found is None else found[0]


async def _put_indexed(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str, now: IndexedConversation
) -> None:
    await cur.execute(
        db.sql(
            'INSERT INTO {index_conversations} (conversation_id, revision, head, depth, tips, timed)'
            ' VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (conversation_id) DO UPDATE SET'
            ' revision = EXCLUDED.revision, head = EXCLUDED.head, depth = EXCLUDED.depth, tips = EXCLUDED.tips,'
            ' timed = EXCLUDED.timed'
        ),
        (conversation_id, now.revision, now.head, now.depth, json.dumps(list(now.tips)), int(now.timed)),
    )


async def _mark_pending(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str, run_id: str, upto: int
) -> None:
    await cur.execute(
        db.sql(
            'INSERT INTO {pending} (conversation_id, run_id, upto) VALUES (%s, %s, %s)'
            ' ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = EXCLUDED.upto'
        ),
        (conversation_id, run_id, upto),
    )


def _indexed(row: Sequence[Any]) -> IndexedConversation:
    _, revision, head, depth, tips, timed = row
    return IndexedConversation(
        revision=revision, head=head, depth=depth, tips=tuple(json.loads(tips)), timed=bool(timed)
    )
