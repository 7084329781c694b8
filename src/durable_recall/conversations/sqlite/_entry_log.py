"""The SQLite conversation store's entry log as the search index reads it (see `_entry_log`).

Reads are one statement or one `BEGIN` each; `advance` and `reset` take `BEGIN IMMEDIATE`, the
file's write lock, which is also what serialises the index's own commits: a reset never interleaves
with a catch-up's commit.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence
from typing import Any

from ...stores.sqlite import SqliteConnection, chunked, marks, transaction
from .._api import ConversationEntry
from .._entry_log import IndexedConversation, LogRun, log_run_row, read_log_run
from .._rows import decode_entry

__all__ = ('SqliteEntryLog', 'forget_index')

_LINE = (
    'WITH RECURSIVE chain (entry_id, parent_id, depth) AS ('
    ' SELECT entry_id, parent_id, 1 FROM drc_entries WHERE entry_id = ?'
    ' UNION ALL SELECT e.entry_id, e.parent_id, c.depth + 1'
    ' FROM drc_entries AS e JOIN chain AS c ON e.entry_id = c.parent_id WHERE c.entry_id <> ?'
    ') SELECT entry_id, parent_id FROM chain ORDER BY depth DESC'
)
"""From a head up its parents until the stop entry (included) or the first entry, oldest first: ids only."""

_RUN_COLUMNS = 'run_id, conversation_id, scope, started_at, metadata, head, skip, token'


class SqliteEntryLog:
    """`EntryLog` over the store's connection; `connection` is where the index's `drc_` tables are."""

    def __init__(self, connection: SqliteConnection) -> None:
        self.connection = connection

    async def indexed(self, conversation_ids: Sequence[str] | None) -> dict[str, IndexedConversation]:
        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            query = 'SELECT conversation_id, revision, head, depth, tips, timed FROM drc_index_conversations'
            if conversation_ids is None:
                return conn.execute(query).fetchall()
            return _select_in(conn, query + ' WHERE conversation_id IN', conversation_ids)

        return {row[0]: _indexed(row) for row in await self.connection.call(read)}

    async def line(self, head_id: str) -> list[str]:
        rows = await self.connection.call(lambda conn: conn.execute(_LINE, (head_id, '')).fetchall())
        if not rows or rows[0][1] is not None:
            raise KeyError(rows[0][1] if rows else head_id)
        return [entry_id for entry_id, _ in rows]

    async def walk(self, head_id: str, stop_id: str) -> list[str] | None:
        rows = await self.connection.call(lambda conn: conn.execute(_LINE, (head_id, stop_id)).fetchall())
        if not rows or rows[0][0] != stop_id:
            return None
        return [entry_id for entry_id, _ in rows[1:]]

    async def entries(self, entry_ids: Sequence[str]) -> dict[str, ConversationEntry]:
        ids = list(dict.fromkeys(entry_ids))

        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return _select_in(conn, 'SELECT entry_id, parent_id, kind, body FROM drc_entries WHERE entry_id IN', ids)

        return await self.connection.read(read, lambda rows: {row[0]: decode_entry(*row) for row in rows})

    async def runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        ids = list(dict.fromkeys(run_ids))

        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return _select_in(conn, f'SELECT {_RUN_COLUMNS} FROM drc_runs WHERE run_id IN', ids)

        return {row[0]: read_log_run(row) for row in await self.connection.call(read)}

    async def advance(self, conversation_id: str, expected: str, now: IndexedConversation) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with transaction(conn, 'BEGIN IMMEDIATE'):
                if _revision(conn, conversation_id) != expected:
                    return False
                _put_indexed(conn, conversation_id, now)
                conn.execute('UPDATE drc_runs SET head = ? WHERE run_id = ?', (now.head, conversation_id))
                _mark_pending(conn, conversation_id, conversation_id, now.depth)
                return True

        return await self.connection.call(write)

    async def reset(
        self, conversation_id: str, expected: str | None, now: IndexedConversation | None, runs: Sequence[LogRun]
    ) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with transaction(conn, 'BEGIN IMMEDIATE'):
                if _revision(conn, conversation_id) != expected:
                    return False
                forget_index(conn, conversation_id)
                if now is not None:
                    _put_indexed(conn, conversation_id, now)
                    conn.executemany(
                        f'INSERT INTO drc_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                        [log_run_row(run) for run in runs],
                    )
                    for run in runs:
                        _mark_pending(conn, conversation_id, run.run_id, run.upto)
                return True

        return await self.connection.call(write)


def _select_in(conn: sqlite3.Connection, query: str, values: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of `query` (ending in `IN`) for every value, a chunk at a time, all in one read transaction."""
    rows: list[tuple[Any, ...]] = []
    with transaction(conn, 'BEGIN'):
        for chunk in chunked(values):
            rows += conn.execute(f'{query} ({marks(chunk)})', chunk).fetchall()
    return rows


def forget_index(conn: sqlite3.Connection, conversation_id: str) -> None:
    """Delete everything the index holds of a conversation (inside the caller's write transaction)."""
    conn.execute('DELETE FROM drc_pending WHERE conversation_id = ?', (conversation_id,))
    found = conn.execute('SELECT scope_key FROM drc_index_scopes WHERE conversation_id = ?', (conversation_id,))
    for (scope_key,) in found.fetchall():
        for table in ('drc_index_postings', 'drc_index_hashes', 'drc_index_runs', 'drc_index_scopes'):
            conn.execute(f'DELETE FROM {table} WHERE scope_key = ?', (scope_key,))
    conn.execute('DELETE FROM drc_runs WHERE conversation_id = ?', (conversation_id,))
    held = conn.execute('DELETE FROM drc_index_conversations WHERE conversation_id = ?', (conversation_id,))
    if held.rowcount:
        conn.execute(
            "INSERT INTO drc_meta (key, value) VALUES ('index_generation', ?)"
            ' ON CONFLICT (key) DO UPDATE SET value = excluded.value',
            (uuid.uuid4().hex,),
        )


def _revision(conn: sqlite3.Connection, conversation_id: str) -> str | None:
    found = conn.execute(
        'SELECT revision FROM drc_index_conversations WHERE conversation_id = ?', (conversation_id,)
    ).fetchone()
    return None if found is None else found[0]


def _put_indexed(conn: sqlite3.Connection, conversation_id: str, now: IndexedConversation) -> None:
    conn.execute(
        'INSERT INTO drc_index_conversations (conversation_id, revision, head, depth, tips, timed)'
        ' VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET revision = excluded.revision,'
        ' head = excluded.head, depth = excluded.depth, tips = excluded.tips, timed = excluded.timed',
        (conversation_id, now.revision, now.head, now.depth, json.dumps(list(now.tips)), int(now.timed)),
    )


def _mark_pending(conn: sqlite3.Connection, conversation_id: str, run_id: str, upto: int) -> None:
    conn.execute(
        'INSERT INTO drc_pending (conversation_id, run_id, upto) VALUES (?, ?, ?)'
        ' ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = excluded.upto',
        (conversation_id, run_id, upto),
    )


def _indexed(row: Sequence[Any]) -> IndexedConversation:
    _, revision, head, depth, tips, timed = row
    return IndexedConversation(
        revision=revision, head=head, depth=depth, tips=tuple(json.loads(tips)), timed=bool(timed)
    )
