"""The SQLite store's half of the search index: `dr_pending` and the `dr_index_*` tables.

Every method is one transaction on the store's connection, run in a worker thread (which also
turns SQLite errors into the store's errors), except a search's point reads (the scope's status,
postings, run rows by key), which run inline when the connection is free
(`SqliteConnection.lookup`). Writes take `BEGIN IMMEDIATE`, so a commit and a
save or delete of another process queue on SQLite's write lock; reads take a plain `BEGIN`, so
their statements see one snapshot of the file. A commit is the index layer's `apply_commits` over
`SqliteIndexWriter`, run inline in that thread.

Lists of terms, run ids and hashes are bound in chunks: old SQLite builds allow at most 999
parameters per statement.

The conversation stores keep the same index over their entry log in `drc_` tables of their own
file: `SqliteIndex(connection, prefix='drc_')` names every table with that prefix instead.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar, cast

from ...index import (
    IndexedRunRow,
    PostingsRow,
    RunCommit,
    ScopeSpans,
    ScopeStatus,
    ScopeView,
    SpansWanted,
    apply_commits,
    run_inline,
)
from .._run_rows import indexed_run
from .._sqlite_migrations import SQLITE_INDEX_RESET
from ._connection import SqliteConnection, transaction
from ._index_writer import SCOPE_KEY, SqliteIndexWriter, bump_generation
from ._params import chunked, marks

__all__ = ('SqliteIndex', 'forget_conversation', 'mark_pending')

_T = TypeVar('_T')
_TABLE_PREFIX = re.compile(r'\bdr_')


class _Lender(Protocol):
    """Lends a connection to a function in a worker thread (`SqliteConnection.call`, or the conversation store's)."""

    async def call(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `query` holding the connection."""
        ...

    async def lookup(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run a point read holding the connection, inline when it is free (`SqliteConnection.lookup`)."""
        ...


class _Renamed:
    """A connection whose statements name the `dr_` tables with another prefix (everything else delegated)."""

    def __init__(self, conn: sqlite3.Connection, prefix: str) -> None:
        self._conn = conn
        self._prefix = prefix

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        return self._conn.execute(_TABLE_PREFIX.sub(self._prefix, sql), parameters)

    def executemany(self, sql: str, parameters: Any) -> sqlite3.Cursor:
        return self._conn.executemany(_TABLE_PREFIX.sub(self._prefix, sql), parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


_RUN_COLUMNS = 'run_key, run_id, scope_key, seen, first, lengths, seqs, roles, times, state, started_at'


_PENDING = 'SELECT p.run_id FROM dr_pending AS p JOIN dr_runs AS r ON r.run_id = p.run_id'

_SPANS = (
    'SELECT run_key, first, substr(lengths, 1, 6) FROM dr_index_runs'
    f' WHERE scope_key = {SCOPE_KEY} ORDER BY started_at, run_id'
)
"""A conversation's spans (`scope_spans`): the head of `lengths` (flags and count) is all a span needs."""

_INLINE_SPANS = 4096
"""The most spans read inline (a few ms); a conversation with more runs is listed in a worker thread."""


def _columns(rows: Iterable[tuple[int, int, bytes]], most: int | None = None) -> ScopeSpans | None:
    """The rows as `ScopeSpans`, taken one at a time (no list of row tuples); `None` past `most` rows."""
    run_keys: list[int] = []
    firsts: list[int] = []
    lengths: list[bytes] = []
    for run_key, first, head in rows:
        if most is not None and len(run_keys) == most:
            return None
        run_keys.append(run_key)
        firsts.append(first)
        lengths.append(head)
    return ScopeSpans(run_keys=run_keys, firsts=firsts, lengths=lengths)


class _Lend(Protocol):
    """`SqliteConnection.call` or `.lookup`: runs a query holding the connection."""

    async def __call__(self, query: Callable[[sqlite3.Connection], _T]) -> _T: ...


def _renaming(lend: _Lend, prefix: str) -> _Lend:
    """`lend`, with its queries' `dr_` tables named with `prefix` instead."""
    if prefix == 'dr_':
        return lend

    async def renamed(query: Callable[[sqlite3.Connection], _T]) -> _T:
        return await lend(lambda conn: query(cast(sqlite3.Connection, _Renamed(conn, prefix))))

    return renamed


class SqliteIndex:
    """`IndexStorage` over the SQLite store's connection."""

    def __init__(self, db: SqliteConnection | _Lender, *, prefix: str = 'dr_') -> None:
        """Keep the store's connection; nothing is read until a method is called.

        Args:
            db: The connection the index's tables are in.
            prefix: The tables' name prefix (`'drc_'`: a conversation store's index).
        """
        self._run = _renaming(db.call, prefix)
        self._look = _renaming(db.lookup, prefix)

    def __repr__(self) -> str:
        return 'SqliteIndex()'

    async def status(self, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
        def read(conn: sqlite3.Connection) -> ScopeStatus:
            with transaction(conn, 'BEGIN'):
                return _status(conn, conversation_id, all_scopes=all_scopes)

        return await self._look(read)

    async def view(
        self,
        conversation_id: str | None,
        *,
        all_scopes: bool,
        terms: Sequence[str],
        known: str | None,
        known_terms: Sequence[str] = (),
        spans: SpansWanted = 'no',
    ) -> ScopeView:
        """Status, postings and spans in one read transaction (`ScopeViews`): one point read, not four."""

        def read(conn: sqlite3.Connection) -> ScopeView:
            with transaction(conn, 'BEGIN'):
                status = _status(conn, conversation_id, all_scopes=all_scopes)
                moved = status.generation != known
                asked = [*terms, *(term for term in known_terms if term not in terms)] if moved else list(terms)
                found = _postings(conn, asked, conversation_id, all_scopes=all_scopes)
                listed = None
                if not all_scopes and (spans == 'yes' or (spans == 'if-moved' and moved)):
                    # A conversation of more runs is listed in a worker thread when windows need it.
                    params = (conversation_id, conversation_id)
                    listed = _columns(conn.execute(f'{_SPANS} LIMIT {_INLINE_SPANS + 1}', params), _INLINE_SPANS)
            return ScopeView(status=status, postings=found, moved=moved, spans=listed)

        return await self._look(read)

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, IndexedRunRow]:
        rows = await self._rows_where('run_id', run_ids)
        by_id = {row.run_id: row for row in rows}
        return {run_id: by_id[run_id] for run_id in run_ids if run_id in by_id}

    async def runs_by_key(self, run_keys: Sequence[int]) -> dict[int, IndexedRunRow]:
        return {row.run_key: row for row in await self._rows_where('run_key', run_keys)}

    async def _rows_where(self, column: str, values: Sequence[str] | Sequence[int]) -> list[IndexedRunRow]:
        def read(conn: sqlite3.Connection) -> list[IndexedRunRow]:
            rows: list[IndexedRunRow] = []
            with transaction(conn, 'BEGIN'):
                for chunk in chunked(values):
                    found = conn.execute(
                        f'SELECT {_RUN_COLUMNS} FROM dr_index_runs WHERE {column} IN ({marks(chunk)})', chunk
                    )
                    rows.extend(indexed_run(*row) for row in found)
            return rows

        return await self._look(read)

    async def scope_runs(self, conversation_id: str | None, *, all_scopes: bool) -> list[IndexedRunRow]:
        columns = 'run_key, run_id, scope_key, seen, first, lengths'
        order = 'ORDER BY started_at, run_id'

        def read(conn: sqlite3.Connection) -> list[IndexedRunRow]:
            if all_scopes:
                found = conn.execute(f'SELECT {columns} FROM dr_index_runs {order}')
            else:
                found = conn.execute(
                    f'SELECT {columns} FROM dr_index_runs WHERE scope_key = {SCOPE_KEY} {order}',
                    (conversation_id, conversation_id),
                )
            return [
                indexed_run(run_key, run_id, scope_key, seen, first, lengths, b'', b'', b'', b'')
                for run_key, run_id, scope_key, seen, first, lengths in found
            ]

        return await self._run(read)

    async def scope_spans(self, conversation_id: str | None) -> ScopeSpans:
        params = (conversation_id, conversation_id)

        def head(conn: sqlite3.Connection) -> ScopeSpans | None:
            return _columns(conn.execute(f'{_SPANS} LIMIT {_INLINE_SPANS + 1}', params), _INLINE_SPANS)

        # Most conversations' listings are a few ms of C: read inline. A longer one is a scan, for a worker.
        found = await self._look(head)
        if found is None:
            found = await self._run(lambda conn: _columns(conn.execute(_SPANS, params)))
        assert found is not None, 'a listing without a bound is never cut'
        return found

    async def postings(
        self, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[PostingsRow]]:
        def read(conn: sqlite3.Connection) -> dict[str, list[PostingsRow]]:
            with transaction(conn, 'BEGIN'):
                return _postings(conn, terms, conversation_id, all_scopes=all_scopes)

        return await self._look(read)

    async def inherited(self, conversation_id: str, hashes: Sequence[bytes], *, exclude_run_id: str) -> set[bytes]:
        def read(conn: sqlite3.Connection) -> set[bytes]:
            held: set[bytes] = set()
            with transaction(conn, 'BEGIN'):
                for chunk in chunked(dict.fromkeys(hashes)):
                    rows = conn.execute(
                        'SELECT hash FROM dr_index_hashes'
                        ' WHERE scope_key = (SELECT scope_key FROM dr_index_scopes WHERE conversation_id = ?)'
                        ' AND run_key <> COALESCE((SELECT run_key FROM dr_index_runs WHERE run_id = ?), -1)'
                        f' AND hash IN ({marks(chunk)})',
                        [conversation_id, exclude_run_id, *chunk],
                    )
                    held.update(digest for (digest,) in rows)
            return held

        return await self._run(read)

    async def terms(self, conversation_id: str | None, *, all_scopes: bool) -> list[str]:
        def read(conn: sqlite3.Connection) -> list[str]:
            if all_scopes:
                rows = conn.execute('SELECT DISTINCT term FROM dr_index_postings ORDER BY term')
            else:
                rows = conn.execute(
                    f'SELECT DISTINCT term FROM dr_index_postings WHERE scope_key = {SCOPE_KEY} ORDER BY term',
                    (conversation_id, conversation_id),
                )
            return [term for (term,) in rows]

        return await self._run(read)

    async def rebuild(self) -> int:
        def write(conn: sqlite3.Connection) -> int:
            with transaction(conn, 'BEGIN IMMEDIATE'):
                for statement in SQLITE_INDEX_RESET:
                    conn.execute(statement)
                bump_generation(conn)
                return conn.execute('SELECT COUNT(*) FROM dr_pending').fetchone()[0]

        return await self._run(write)

    async def commit(self, change: RunCommit) -> None:
        await self.commit_many([change])

    async def commit_many(self, changes: Sequence[RunCommit]) -> None:
        def write(conn: sqlite3.Connection) -> None:
            with transaction(conn, 'BEGIN IMMEDIATE'):
                run_inline(apply_commits(SqliteIndexWriter(conn), changes))

        await self._run(write)


def _status(conn: sqlite3.Connection, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
    """The scope's status (`IndexStorage.status`); call inside a read transaction."""
    if all_scopes:
        found = conn.execute("SELECT value FROM dr_meta WHERE key = 'index_generation'").fetchone()
        generation = '' if found is None else found[0]
        docs, length = conn.execute(
            'SELECT COALESCE(SUM(docs), 0), COALESCE(SUM(length), 0) FROM dr_index_scopes'
        ).fetchone()
        pending = conn.execute(f'{_PENDING} ORDER BY r.started_at, r.run_id')
    else:
        found = conn.execute(
            f'SELECT generation, docs, length FROM dr_index_scopes WHERE scope_key = {SCOPE_KEY}',
            (conversation_id, conversation_id),
        ).fetchone()
        generation, docs, length = ('', 0, 0) if found is None else found
        pending = conn.execute(
            f'{_PENDING} WHERE p.conversation_id = ? ORDER BY r.started_at, r.run_id', (conversation_id or '',)
        )
    return ScopeStatus(generation=generation, pending=[run_id for (run_id,) in pending], docs=docs, length=length)


def _postings(
    conn: sqlite3.Connection, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
) -> dict[str, list[PostingsRow]]:
    """Each term's chunks in the scope (`IndexStorage.postings`); call inside a read transaction."""
    found: dict[str, list[PostingsRow]] = {}
    for chunk in chunked(dict.fromkeys(terms)):
        if all_scopes:
            # Keyed by scope first: every scope is looked up by key, never scanned for.
            rows = conn.execute(
                'SELECT term, chunk, postings FROM dr_index_postings'
                ' WHERE scope_key IN (SELECT scope_key FROM dr_index_scopes)'
                f' AND term IN ({marks(chunk)}) ORDER BY term, scope_key, chunk',
                chunk,
            )
        else:
            rows = conn.execute(
                'SELECT term, chunk, postings FROM dr_index_postings'
                f' WHERE term IN ({marks(chunk)}) AND scope_key = {SCOPE_KEY}'
                ' ORDER BY term, scope_key, chunk',
                [*chunk, conversation_id, conversation_id],
            )
        for term, number, data in rows:
            found.setdefault(term, []).append(PostingsRow(chunk=number, postings=data))
    return found


def mark_pending(conn: sqlite3.Connection, conversation_id: str | None, run_id: str, upto: int) -> None:
    """Mark a run as holding snapshots up to `upto` that the index has not read (in the save's transaction)."""
    conn.execute(
        'INSERT INTO dr_pending (conversation_id, run_id, upto) VALUES (?, ?, ?)'
        ' ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = excluded.upto',
        (conversation_id or '', run_id, upto),
    )


def forget_conversation(conn: sqlite3.Connection, conversation_id: str) -> None:
    """Delete a conversation's pending marks and index rows; call in the delete's transaction, before its runs go."""
    conn.execute(
        'DELETE FROM dr_pending WHERE conversation_id = ?'
        ' AND run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
        (conversation_id, conversation_id),
    )
    found = conn.execute('SELECT scope_key FROM dr_index_scopes WHERE conversation_id = ?', (conversation_id,))
    for (scope_key,) in found.fetchall():
        for table in ('dr_index_postings', 'dr_index_hashes', 'dr_index_runs', 'dr_index_scopes'):
            conn.execute(f'DELETE FROM {table} WHERE scope_key = ?', (scope_key,))
    bump_generation(conn)
