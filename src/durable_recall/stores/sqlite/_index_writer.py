"""The SQLite store's index writes: `IndexWriter` on a connection inside a `BEGIN IMMEDIATE` transaction.

The methods are coroutines that never suspend: each runs its statements synchronously, in the
worker thread that holds the connection, where `SqliteIndex.commit_many` drives the index layer's
`apply_commits` with `run_inline`. Lists of terms are bound in chunks (`_params`).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence

from ...index import FullTail, RunCommit, StoredRun, TermChunk
from ._params import chunked, marks

__all__ = ('SCOPE_KEY', 'SqliteIndexWriter', 'bump_generation')

SCOPE_KEY = '(SELECT scope_key FROM dr_index_scopes WHERE conversation_id = ? UNION ALL SELECT 0 WHERE ? IS NULL)'
"""The scope key of a conversation (bound twice): 0 for `None`, `NULL` when it has no scope row."""


class SqliteIndexWriter:
    """`IndexWriter` over a connection in a write transaction (see the module docstring)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        """Write through `conn`, which the caller holds in a transaction."""
        self._conn = conn

    async def stored_run(self, run_id: str) -> StoredRun | None:
        found = self._conn.execute(
            'SELECT r.conversation_id, i.run_key, i.seen FROM dr_runs AS r'
            ' LEFT JOIN dr_index_runs AS i ON i.run_id = r.run_id WHERE r.run_id = ?',
            (run_id,),
        ).fetchone()
        return None if found is None else StoredRun(*found)

    async def update_scope(self, conversation_id: str | None, *, docs: int, length: int, generation: str) -> int:
        conn = self._conn
        found = conn.execute(
            f'SELECT scope_key FROM dr_index_scopes WHERE scope_key = {SCOPE_KEY}', (conversation_id, conversation_id)
        ).fetchone()
        if found is None:
            inserted = conn.execute(
                'INSERT INTO dr_index_scopes (scope_key, conversation_id, generation, docs, length)'
                ' VALUES (?, ?, ?, 0, 0)',
                (None if conversation_id is not None else 0, conversation_id, ''),
            )
            scope_key = inserted.lastrowid
            assert scope_key is not None, 'an INSERT into a rowid table sets lastrowid'
        else:
            scope_key = found[0]
        conn.execute(
            'UPDATE dr_index_scopes SET docs = docs + ?, length = length + ?, generation = ? WHERE scope_key = ?',
            (docs, length, generation, scope_key),
        )
        return scope_key

    async def put_run(self, change: RunCommit, scope_key: int, run_key: int | None) -> int:
        values = (
            scope_key,
            change.started_at,
            change.seen,
            change.first,
            change.lengths,
            change.seqs,
            change.roles,
            change.times,
            change.state,
        )
        if run_key is None:
            run_key = _next_run_key(self._conn)
            self._conn.execute(
                'INSERT INTO dr_index_runs'
                ' (run_key, run_id, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
                ' VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                (run_key, change.run_id, *values),
            )
            return run_key
        self._conn.execute(
            'UPDATE dr_index_runs SET scope_key = ?, started_at = ?, seen = ?, first = ?,'
            ' lengths = ?, seqs = ?, roles = ?, times = ?, state = ? WHERE run_key = ?',
            (*values, run_key),
        )
        return run_key

    async def chunks(self, scope_key: int, terms: Sequence[str]) -> list[TermChunk]:
        found: list[TermChunk] = []
        for chunk in chunked(terms):
            rows = self._conn.execute(
                f'SELECT term, chunk, postings FROM dr_index_postings WHERE scope_key = ? AND term IN ({marks(chunk)})',
                [scope_key, *chunk],
            )
            found.extend(TermChunk(*row) for row in rows)
        return found

    async def set_chunk(self, scope_key: int, term: str, chunk: int, postings: bytes) -> None:
        self._conn.execute(
            'UPDATE dr_index_postings SET postings = ? WHERE scope_key = ? AND term = ? AND chunk = ?',
            (postings, scope_key, term, chunk),
        )

    async def delete_chunk(self, scope_key: int, term: str, chunk: int) -> None:
        self._conn.execute(
            'DELETE FROM dr_index_postings WHERE scope_key = ? AND term = ? AND chunk = ?', (scope_key, term, chunk)
        )

    async def append_tails(self, tails: Sequence[tuple[int, str, bytes]], *, full_at: int) -> list[FullTail]:
        conn = self._conn
        # `||` makes text of blobs; the cast takes the same bytes back as a blob. In key order: each
        # upsert lands next to the last one in the tree.
        conn.executemany(
            'INSERT INTO dr_index_postings (scope_key, term, chunk, postings) VALUES (?, ?, 0, ?) ON CONFLICT'
            ' (scope_key, term, chunk) DO UPDATE SET postings = CAST(postings || excluded.postings AS BLOB)',
            tails,
        )
        by_scope: dict[int, list[str]] = {}
        for scope_key, term, _ in tails:
            by_scope.setdefault(scope_key, []).append(term)
        full: list[FullTail] = []
        for scope_key, terms in by_scope.items():
            for chunk in chunked(terms):
                rows = conn.execute(
                    'SELECT o.term, o.postings, (SELECT MAX(c.chunk) FROM dr_index_postings AS c'
                    ' WHERE c.scope_key = o.scope_key AND c.term = o.term) FROM dr_index_postings AS o'
                    f' WHERE o.scope_key = ? AND o.chunk = 0 AND o.term IN ({marks(chunk)})'
                    ' AND length(o.postings) >= ?',
                    [scope_key, *chunk, full_at],
                )
                full.extend(FullTail(scope_key, term, data, last) for term, data, last in rows)
        return full

    async def seal_tails(self, sealed: Sequence[tuple[int, str, int, bytes]], tails: Sequence[tuple[int, str]]) -> None:
        # Term by term, each tail deleted right after its chunks went in: the next term's chunks
        # then reuse the room it leaves on the same pages (all inserts first grows the table ~3%).
        chunks: dict[tuple[int, str], list[tuple[int, str, int, bytes]]] = {}
        for row in sealed:
            chunks.setdefault((row[0], row[1]), []).append(row)
        for scope_key, term in tails:
            self._conn.executemany(
                'INSERT INTO dr_index_postings (scope_key, term, chunk, postings) VALUES (?, ?, ?, ?)',
                chunks.get((scope_key, term), []),
            )
            self._conn.execute(
                'DELETE FROM dr_index_postings WHERE scope_key = ? AND term = ? AND chunk = 0', (scope_key, term)
            )

    async def add_hashes(self, scope_key: int, run_key: int, hashes: Sequence[bytes]) -> None:
        self._conn.executemany(
            'INSERT OR IGNORE INTO dr_index_hashes (scope_key, hash, run_key) VALUES (?, ?, ?)',
            [(scope_key, digest, run_key) for digest in hashes],
        )

    async def clear_pending(self, conversation_id: str | None, run_id: str, upto: int) -> None:
        self._conn.execute(
            'DELETE FROM dr_pending WHERE conversation_id = ? AND run_id = ? AND upto <= ?',
            (conversation_id or '', run_id, upto),
        )

    async def bump_generation(self, generation: str) -> None:
        bump_generation(self._conn, generation)


def bump_generation(conn: sqlite3.Connection, generation: str | None = None) -> None:
    """Set the store-wide index generation (a new one unless given)."""
    conn.execute(
        "INSERT INTO dr_meta (key, value) VALUES ('index_generation', ?)"
        ' ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        (generation or uuid.uuid4().hex,),
    )


def _next_run_key(conn: sqlite3.Connection) -> int:
    """A run key no run of this index ever had: past the highest in the table and the highest ever handed out.

    SQLite hands a new rowid out as one past the highest present, so a deleted run's key would be
    reused by the next run registered; a process that cached what it showed by key would then
    show the deleted run's messages for the new one. The high-water mark is kept in `dr_meta`.
    """
    (key,) = conn.execute(
        'SELECT MAX(COALESCE((SELECT MAX(run_key) FROM dr_index_runs), 0),'
        " COALESCE((SELECT CAST(value AS INTEGER) FROM dr_meta WHERE key = 'index_last_run_key'), 0)) + 1"
    ).fetchone()
    conn.execute(
        "INSERT INTO dr_meta (key, value) VALUES ('index_last_run_key', ?)"
        ' ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        (str(key),),
    )
    return int(key)
