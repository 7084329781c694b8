"""The SQLite store's half of the search index: `dr_pending` and the `dr_index_*` tables.

Every method is one transaction on the store's connection, run through the store's worker-thread
runner (which also turns SQLite errors into the store's errors). Writes take `BEGIN IMMEDIATE`,
so a commit and a save or delete of another process queue on SQLite's write lock; reads take a
plain `BEGIN`, so their statements see one snapshot of the file.

Lists of terms, run ids and hashes are bound in chunks: old SQLite builds allow at most 999
parameters per statement.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Protocol, TypeVar

from ...index import (
    SEAL_BYTES,
    IndexedRunRow,
    PostingsRow,
    RunCommit,
    ScopeStatus,
    StaleIndexError,
    appended_postings,
    seal_tail,
    without_run,
)
from .._rows import indexed_run

__all__ = ('SqliteIndex', 'SqliteRunner', 'forget_conversation', 'mark_pending', 'transaction')

_T = TypeVar('_T')

_CHUNK = 500
"""Values bound per `IN (...)` list."""

_RUN_COLUMNS = 'run_key, run_id, scope_key, seen, first, lengths, seqs, roles, times, state, started_at'

_SCOPE_KEY = '(SELECT scope_key FROM dr_index_scopes WHERE conversation_id = ? UNION ALL SELECT 0 WHERE ? IS NULL)'
"""The scope key of a conversation (bound twice): 0 for `None`, `NULL` when it has no scope row."""

_PENDING = 'SELECT p.run_id FROM dr_pending AS p JOIN dr_runs AS r ON r.run_id = p.run_id'


class SqliteRunner(Protocol):
    """Runs a function on the store's connection in a worker thread, with the store's error mapping."""

    async def __call__(self, query: Callable[[sqlite3.Connection], _T], /) -> _T:
        """The function's result."""
        ...


class SqliteIndex:
    """`IndexStorage` over the SQLite store's connection."""

    def __init__(self, run: SqliteRunner) -> None:
        """Keep the store's runner; nothing is read until a method is called."""
        self._run = run

    def __repr__(self) -> str:
        return 'SqliteIndex()'

    async def status(self, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
        def read(conn: sqlite3.Connection) -> ScopeStatus:
            with transaction(conn, 'BEGIN'):
                if all_scopes:
                    found = conn.execute("SELECT value FROM dr_meta WHERE key = 'index_generation'").fetchone()
                    generation = '' if found is None else found[0]
                    docs, length = conn.execute(
                        'SELECT COALESCE(SUM(docs), 0), COALESCE(SUM(length), 0) FROM dr_index_scopes'
                    ).fetchone()
                    pending = conn.execute(f'{_PENDING} ORDER BY r.started_at, r.run_id')
                else:
                    found = conn.execute(
                        f'SELECT generation, docs, length FROM dr_index_scopes WHERE scope_key = {_SCOPE_KEY}',
                        (conversation_id, conversation_id),
                    ).fetchone()
                    generation, docs, length = ('', 0, 0) if found is None else found
                    pending = conn.execute(
                        f'{_PENDING} WHERE p.conversation_id = ? ORDER BY r.started_at, r.run_id',
                        (conversation_id or '',),
                    )
                return ScopeStatus(
                    generation=generation, pending=[run_id for (run_id,) in pending], docs=docs, length=length
                )

        return await self._run(read)

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
                for chunk in _chunks(values):
                    found = conn.execute(
                        f'SELECT {_RUN_COLUMNS} FROM dr_index_runs WHERE {column} IN ({_marks(chunk)})', chunk
                    )
                    rows.extend(indexed_run(*row) for row in found)
            return rows

        return await self._run(read)

    async def scope_runs(self, conversation_id: str | None, *, all_scopes: bool) -> list[IndexedRunRow]:
        columns = 'run_key, run_id, scope_key, seen, first, lengths'
        order = 'ORDER BY started_at, run_id'

        def read(conn: sqlite3.Connection) -> list[IndexedRunRow]:
            if all_scopes:
                found = conn.execute(f'SELECT {columns} FROM dr_index_runs {order}')
            else:
                found = conn.execute(
                    f'SELECT {columns} FROM dr_index_runs WHERE scope_key = {_SCOPE_KEY} {order}',
                    (conversation_id, conversation_id),
                )
            return [
                indexed_run(run_key, run_id, scope_key, seen, first, lengths, b'', b'', b'', '')
                for run_key, run_id, scope_key, seen, first, lengths in found
            ]

        return await self._run(read)

    async def postings(
        self, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[PostingsRow]]:
        def read(conn: sqlite3.Connection) -> dict[str, list[PostingsRow]]:
            found: dict[str, list[PostingsRow]] = {}
            with transaction(conn, 'BEGIN'):
                for chunk in _chunks(dict.fromkeys(terms)):
                    if all_scopes:
                        # Keyed by scope first: every scope is looked up by key, never scanned for.
                        rows = conn.execute(
                            'SELECT term, chunk, postings FROM dr_index_postings'
                            ' WHERE scope_key IN (SELECT scope_key FROM dr_index_scopes)'
                            f' AND term IN ({_marks(chunk)}) ORDER BY term, scope_key, chunk',
                            chunk,
                        )
                    else:
                        rows = conn.execute(
                            'SELECT term, chunk, postings FROM dr_index_postings'
                            f' WHERE term IN ({_marks(chunk)}) AND scope_key = {_SCOPE_KEY}'
                            ' ORDER BY term, scope_key, chunk',
                            [*chunk, conversation_id, conversation_id],
                        )
                    for term, number, data in rows:
                        found.setdefault(term, []).append(PostingsRow(chunk=number, postings=data))
            return found

        return await self._run(read)

    async def inherited(self, conversation_id: str, hashes: Sequence[bytes], *, exclude_run_id: str) -> set[bytes]:
        def read(conn: sqlite3.Connection) -> set[bytes]:
            held: set[bytes] = set()
            with transaction(conn, 'BEGIN'):
                for chunk in _chunks(dict.fromkeys(hashes)):
                    rows = conn.execute(
                        'SELECT hash FROM dr_index_hashes'
                        ' WHERE scope_key = (SELECT scope_key FROM dr_index_scopes WHERE conversation_id = ?)'
                        ' AND run_key <> COALESCE((SELECT run_key FROM dr_index_runs WHERE run_id = ?), -1)'
                        f' AND hash IN ({_marks(chunk)})',
                        [conversation_id, exclude_run_id, *chunk],
                    )
                    held.update(digest for (digest,) in rows)
            return held

        return await self._run(read)

    async def commit(self, change: RunCommit) -> None:
        await self.commit_many([change])

    async def commit_many(self, changes: Sequence[RunCommit]) -> None:
        def write(conn: sqlite3.Connection) -> None:
            with transaction(conn, 'BEGIN IMMEDIATE'):
                appended: dict[tuple[int, str], bytes] = {}
                applied = 0
                for change in changes:
                    found = conn.execute(
                        'SELECT r.conversation_id, i.run_key, i.seen FROM dr_runs AS r'
                        ' LEFT JOIN dr_index_runs AS i ON i.run_id = r.run_id WHERE r.run_id = ?',
                        (change.run_id,),
                    ).fetchone()
                    if found is None:
                        continue  # deleted while it was being indexed
                    conversation_id, run_key, seen = found
                    if (-2 if seen is None else seen) != change.expected_seen:
                        raise StaleIndexError(change.run_id)
                    applied += 1
                    scope_key = _update_scope(conn, change)
                    run_key = _put_run(conn, change, scope_key, run_key)
                    _take_out(conn, change, scope_key, run_key)
                    for term, data in appended_postings(change, run_key):
                        appended[scope_key, term] = appended.get((scope_key, term), b'') + data
                    if change.conversation_id is not None and change.hashes:
                        conn.executemany(
                            'INSERT OR IGNORE INTO dr_index_hashes (scope_key, hash, run_key) VALUES (?, ?, ?)',
                            [(scope_key, digest, run_key) for digest in change.hashes],
                        )
                    conn.execute(
                        'DELETE FROM dr_pending WHERE conversation_id = ? AND run_id = ? AND upto <= ?',
                        (conversation_id or '', change.run_id, change.upto),
                    )
                _append(conn, appended)
                if applied:
                    _bump_generation(conn)

        await self._run(write)


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
    _bump_generation(conn)


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str) -> Generator[None]:
    """Run the block in one transaction: committed if it returns, rolled back if it raises."""
    conn.execute(begin)
    try:
        yield
    except BaseException:
        # The original error says more; SQLite has already rolled back if it cannot.
        with suppress(sqlite3.Error):
            conn.execute('ROLLBACK')
        raise
    try:
        conn.execute('COMMIT')
    except sqlite3.Error:
        if conn.in_transaction:
            conn.execute('ROLLBACK')
        raise


def _update_scope(conn: sqlite3.Connection, change: RunCommit) -> int:
    """Create the run's scope row if needed, apply the commit's statistics and a new generation; its key."""
    found = conn.execute(
        f'SELECT scope_key FROM dr_index_scopes WHERE scope_key = {_SCOPE_KEY}',
        (change.conversation_id, change.conversation_id),
    ).fetchone()
    if found is None:
        inserted = conn.execute(
            'INSERT INTO dr_index_scopes (scope_key, conversation_id, generation, docs, length) VALUES (?, ?, ?, 0, 0)',
            (None if change.conversation_id is not None else 0, change.conversation_id, ''),
        )
        scope_key = inserted.lastrowid
        assert scope_key is not None, 'an INSERT into a rowid table sets lastrowid'
    else:
        scope_key = found[0]
    conn.execute(
        'UPDATE dr_index_scopes SET docs = docs + ?, length = length + ?, generation = ? WHERE scope_key = ?',
        (change.docs_delta, change.length_delta, uuid.uuid4().hex, scope_key),
    )
    return scope_key


def _put_run(conn: sqlite3.Connection, change: RunCommit, scope_key: int, run_key: int | None) -> int:
    """Write the run's index row; its key."""
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
        inserted = conn.execute(
            'INSERT INTO dr_index_runs'
            ' (run_id, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
            ' VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
            (change.run_id, *values),
        )
        run_key = inserted.lastrowid
        assert run_key is not None, 'an INSERT into a rowid table sets lastrowid'
        return run_key
    conn.execute(
        'UPDATE dr_index_runs SET scope_key = ?, started_at = ?, seen = ?, first = ?,'
        ' lengths = ?, seqs = ?, roles = ?, times = ?, state = ? WHERE run_key = ?',
        (*values, run_key),
    )
    return run_key


def _take_out(conn: sqlite3.Connection, change: RunCommit, scope_key: int, run_key: int) -> None:
    """Take the run's postings of its `postings_set` terms out of every chunk holding them."""
    for chunk in _chunks(change.postings_set):
        rows = conn.execute(
            f'SELECT term, chunk, postings FROM dr_index_postings WHERE scope_key = ? AND term IN ({_marks(chunk)})',
            [scope_key, *chunk],
        ).fetchall()
        for term, number, data in rows:
            kept = without_run(number, data, run_key)
            if kept is None:
                continue
            if kept:
                conn.execute(
                    'UPDATE dr_index_postings SET postings = ? WHERE scope_key = ? AND term = ? AND chunk = ?',
                    (kept, scope_key, term, number),
                )
            else:
                conn.execute(
                    'DELETE FROM dr_index_postings WHERE scope_key = ? AND term = ? AND chunk = ?',
                    (scope_key, term, number),
                )


def _append(conn: sqlite3.Connection, appended: dict[tuple[int, str], bytes]) -> None:
    """Append to each `(scope key, term)`'s open tail, then seal the tails that are full."""
    if not appended:
        return
    # `||` makes text of blobs; the cast takes the same bytes back as a blob. In key order: each
    # upsert lands next to the last one in the tree.
    conn.executemany(
        'INSERT INTO dr_index_postings (scope_key, term, chunk, postings) VALUES (?, ?, 0, ?)'
        ' ON CONFLICT (scope_key, term, chunk) DO UPDATE SET postings = CAST(postings || excluded.postings AS BLOB)',
        [(scope_key, term, data) for (scope_key, term), data in sorted(appended.items())],
    )
    by_scope: dict[int, list[str]] = {}
    for scope_key, term in appended:
        by_scope.setdefault(scope_key, []).append(term)
    for scope_key, terms in by_scope.items():
        for chunk in _chunks(sorted(terms)):
            due = conn.execute(
                'SELECT term, postings FROM dr_index_postings'
                f' WHERE scope_key = ? AND chunk = 0 AND term IN ({_marks(chunk)}) AND length(postings) >= ?',
                [scope_key, *chunk, SEAL_BYTES],
            ).fetchall()
            for term, data in due:
                _seal(conn, scope_key, term, data)


def _seal(conn: sqlite3.Connection, scope_key: int, term: str, data: bytes) -> None:
    """Seal a full open tail into the term's next chunk number."""
    (last,) = conn.execute(
        'SELECT MAX(chunk) FROM dr_index_postings WHERE scope_key = ? AND term = ?', (scope_key, term)
    ).fetchone()
    conn.executemany(
        'INSERT INTO dr_index_postings (scope_key, term, chunk, postings) VALUES (?, ?, ?, ?)',
        [(scope_key, term, last + 1 + n, chunk) for n, chunk in enumerate(seal_tail(data))],
    )
    conn.execute('DELETE FROM dr_index_postings WHERE scope_key = ? AND term = ? AND chunk = 0', (scope_key, term))


def _bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO dr_meta (key, value) VALUES ('index_generation', ?)"
        ' ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        (uuid.uuid4().hex,),
    )


def _chunks(values: Iterable[_T]) -> Generator[list[_T]]:
    batch: list[_T] = []
    for value in values:
        batch.append(value)
        if len(batch) == _CHUNK:
            yield batch
            batch = []
    if batch:
        yield batch


def _marks(values: Sequence[Any]) -> str:
    return ', '.join('?' * len(values))
