"""The Postgres store's half of the search index: the `{pending}` and `{index_*}` tables.

Reads are single statements, so each sees one snapshot without a stricter isolation level.

A commit and a conversation's deletion first take a transaction-scoped advisory lock named after
the conversation (`lock_conversation`), so the two never interleave: a commit either lands wholly
before a deletion (which then removes it) or wholly after (and finds its run gone, or, for a run
registered meanwhile, starts the conversation's scope afresh). Commits of one conversation queue
on that lock too, which also serialises the creation of its scope row. A commit then locks its
run's row, so a save or a deletion of the run waits for it. Lists of terms and hashes travel as
arrays (`unnest`, `= ANY`), so a commit's thousands of postings are one statement each kind.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, LiteralString

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
from ._connect import PostgresConnector

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

__all__ = ('PostgresIndex', 'forget_conversation', 'lock_conversation')

_SCOPE_KEY: LiteralString = (
    '(SELECT scope_key FROM {index_scopes} WHERE conversation_id = %(conv)s'
    ' UNION ALL SELECT 0 WHERE %(conv)s::text IS NULL)'
)
"""The scope key of `%(conv)s`: 0 for `NULL`, `NULL` when the conversation has no scope row."""

_PENDING: LiteralString = (
    'ARRAY(SELECT p.run_id FROM {pending} AS p JOIN {runs} AS r ON r.run_id = p.run_id'
    ' WHERE p.conversation_id = %(pending)s ORDER BY r.started_at, r.run_id)'
)

_STATUS_SCOPE: LiteralString = (
    'SELECT s.generation, s.docs, s.length, ' + _PENDING + ' FROM (VALUES (1)) AS one (x)'
    ' LEFT JOIN {index_scopes} AS s ON s.scope_key = ' + _SCOPE_KEY
)

_STATUS_ALL: LiteralString = (
    'SELECT g.value, t.docs, t.length,'
    ' ARRAY(SELECT p.run_id FROM {pending} AS p JOIN {runs} AS r ON r.run_id = p.run_id'
    ' ORDER BY r.started_at, r.run_id)'
    ' FROM (SELECT COALESCE(SUM(docs), 0)::bigint AS docs, COALESCE(SUM(length), 0)::bigint AS length'
    ' FROM {index_scopes}) AS t'
    " LEFT JOIN {meta} AS g ON g.key = 'index_generation'"
)

_RUN_COLUMNS: LiteralString = 'run_key, run_id, scope_key, seen, first, lengths, seqs, roles, times, state, started_at'
_LIST_COLUMNS: LiteralString = 'run_key, run_id, scope_key, seen, first, lengths'

_SCOPE_RUNS: LiteralString = 'SELECT ' + _LIST_COLUMNS + ' FROM {index_runs}'
_SCOPE_RUNS_ORDER: LiteralString = ' ORDER BY started_at, run_id'

_POSTINGS: LiteralString = 'SELECT term, chunk, postings FROM {index_postings} WHERE term = ANY(%(terms)s::text[])'
_POSTINGS_ORDER: LiteralString = ' ORDER BY term, scope_key, chunk'
_ALL_SCOPES: LiteralString = ' AND scope_key = ANY(ARRAY(SELECT scope_key FROM {index_scopes}))'

_SCOPE_UPDATE: LiteralString = (
    ' generation = EXCLUDED.generation, docs = s.docs + EXCLUDED.docs, length = s.length + EXCLUDED.length'
    ' RETURNING scope_key'
)
_NEW_SCOPE: dict[bool, LiteralString] = {
    True: 'INSERT INTO {index_scopes} AS s (scope_key, conversation_id, generation, docs, length)'
    ' VALUES (0, NULL, %(generation)s, %(docs)s, %(length)s) ON CONFLICT (scope_key) DO UPDATE SET' + _SCOPE_UPDATE,
    False: 'INSERT INTO {index_scopes} AS s (conversation_id, generation, docs, length)'
    ' VALUES (%(conv)s, %(generation)s, %(docs)s, %(length)s) ON CONFLICT (conversation_id) DO UPDATE SET'
    + _SCOPE_UPDATE,
}

_APPEND: LiteralString = (
    'INSERT INTO {index_postings} AS t (scope_key, term, chunk, postings)'
    ' SELECT new.scope_key, new.term, 0, new.postings'
    ' FROM unnest(%(scopes)s::bigint[], %(terms)s::text[], %(postings)s::bytea[]) AS new (scope_key, term, postings)'
    ' ON CONFLICT (scope_key, term, chunk) DO UPDATE SET postings = t.postings || EXCLUDED.postings'
    ' RETURNING t.scope_key, t.term, octet_length(t.postings)'
)

_BUMP_GENERATION: LiteralString = (
    "INSERT INTO {meta} (key, value) VALUES ('index_generation', %(generation)s)"
    ' ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value'
)


class PostgresIndex:
    """`IndexStorage` over the Postgres store's connector."""

    def __init__(self, db: PostgresConnector) -> None:
        """Keep the store's connector; nothing connects until a method is called."""
        self._db = db

    def __repr__(self) -> str:
        return f'PostgresIndex({self._db.describe()})'

    async def status(self, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
        query = _STATUS_ALL if all_scopes else _STATUS_SCOPE
        params = {} if all_scopes else {'conv': conversation_id, 'pending': conversation_id or ''}
        async with self._db.transaction() as cur:
            await cur.execute(self._db.sql(query), params)
            row = await cur.fetchone()
        assert row is not None, 'the query selects from a one-row relation'
        generation, docs, length, pending = row
        return ScopeStatus(generation=generation or '', pending=list(pending), docs=docs or 0, length=length or 0)

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, IndexedRunRow]:
        if not run_ids:
            return {}
        async with self._db.transaction() as cur:
            query = 'SELECT ' + _RUN_COLUMNS + ' FROM {index_runs} WHERE run_id = ANY(%s::text[])'
            await cur.execute(self._db.sql(query), (list(run_ids),))
            rows = {row[1]: indexed_run(*row) for row in await cur.fetchall()}
        return {run_id: rows[run_id] for run_id in run_ids if run_id in rows}

    async def runs_by_key(self, run_keys: Sequence[int]) -> dict[int, IndexedRunRow]:
        if not run_keys:
            return {}
        async with self._db.transaction() as cur:
            query = 'SELECT ' + _RUN_COLUMNS + ' FROM {index_runs} WHERE run_key = ANY(%s::bigint[])'
            await cur.execute(self._db.sql(query), (list(run_keys),))
            return {row[0]: indexed_run(*row) for row in await cur.fetchall()}

    async def scope_runs(self, conversation_id: str | None, *, all_scopes: bool) -> list[IndexedRunRow]:
        query = (
            _SCOPE_RUNS + _SCOPE_RUNS_ORDER
            if all_scopes
            else _SCOPE_RUNS + ' WHERE scope_key = ' + _SCOPE_KEY + _SCOPE_RUNS_ORDER
        )
        async with self._db.transaction() as cur:
            await cur.execute(self._db.sql(query), {} if all_scopes else {'conv': conversation_id})
            rows = await cur.fetchall()
        return [
            indexed_run(run_key, run_id, scope_key, seen, first, lengths, b'', b'', b'', '')
            for run_key, run_id, scope_key, seen, first, lengths in rows
        ]

    async def postings(
        self, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[PostingsRow]]:
        if not terms:
            return {}
        # Keyed by scope first: every scope is looked up by key, never scanned for.
        query = _POSTINGS + _ALL_SCOPES + _POSTINGS_ORDER
        if not all_scopes:
            query = _POSTINGS + ' AND scope_key = ' + _SCOPE_KEY + _POSTINGS_ORDER
        async with self._db.transaction() as cur:
            await cur.execute(self._db.sql(query), {'terms': list(dict.fromkeys(terms)), 'conv': conversation_id})
            rows = await cur.fetchall()
        found: dict[str, list[PostingsRow]] = {}
        for term, number, data in rows:
            found.setdefault(term, []).append(PostingsRow(chunk=number, postings=data))
        return found

    async def inherited(self, conversation_id: str, hashes: Sequence[bytes], *, exclude_run_id: str) -> set[bytes]:
        if not hashes:
            return set()
        async with self._db.transaction() as cur:
            await cur.execute(
                self._db.sql(
                    'SELECT hash FROM {index_hashes}'
                    ' WHERE scope_key = (SELECT scope_key FROM {index_scopes} WHERE conversation_id = %(conv)s)'
                    ' AND hash = ANY(%(hashes)s::bytea[])'
                    ' AND run_key <> COALESCE((SELECT run_key FROM {index_runs} WHERE run_id = %(run)s), -1)'
                ),
                {'conv': conversation_id, 'hashes': list(dict.fromkeys(hashes)), 'run': exclude_run_id},
            )
            return {digest for (digest,) in await cur.fetchall()}

    async def commit(self, change: RunCommit) -> None:
        await self.commit_many([change])

    async def commit_many(self, changes: Sequence[RunCommit]) -> None:
        sql = self._db.sql
        async with self._db.transaction() as cur:
            # Every conversation's lock first, in one order, so two batches cannot deadlock.
            for conversation_id in sorted({change.conversation_id or '' for change in changes}):
                await lock_conversation(cur, self._db, conversation_id or None)
            appended: dict[tuple[int, str], bytes] = {}
            applied = 0
            for change in changes:
                await cur.execute(
                    sql('SELECT conversation_id FROM {runs} WHERE run_id = %s FOR UPDATE'), (change.run_id,)
                )
                run = await cur.fetchone()
                if run is None:
                    continue  # deleted while it was being indexed
                # A statement of its own, run after the locks: it sees every commit that held them.
                await cur.execute(sql('SELECT run_key, seen FROM {index_runs} WHERE run_id = %s'), (change.run_id,))
                stored = await cur.fetchone()
                if (-2 if stored is None else stored[1]) != change.expected_seen:
                    raise StaleIndexError(change.run_id)
                applied += 1
                scope_key = await self._update_scope(cur, change)
                run_key = await self._put_run(cur, change, scope_key, None if stored is None else stored[0])
                await self._take_out(cur, change, scope_key, run_key)
                for term, data in appended_postings(change, run_key):
                    appended[scope_key, term] = appended.get((scope_key, term), b'') + data
                if change.conversation_id is not None and change.hashes:
                    await cur.execute(
                        sql(
                            'INSERT INTO {index_hashes} (scope_key, hash, run_key)'
                            ' SELECT %s, new.hash, %s FROM unnest(%s::bytea[]) AS new (hash) ON CONFLICT DO NOTHING'
                        ),
                        (scope_key, run_key, list(change.hashes)),
                    )
                await cur.execute(
                    sql(
                        'DELETE FROM {pending} WHERE conversation_id = %(pending)s AND run_id = %(run)s'
                        ' AND upto <= %(upto)s'
                    ),
                    {'pending': run[0] or '', 'run': change.run_id, 'upto': change.upto},
                )
            await self._append(cur, appended)
            if applied:
                await cur.execute(sql(_BUMP_GENERATION), {'generation': uuid.uuid4().hex})

    async def _update_scope(self, cur: AsyncCursor[TupleRow], change: RunCommit) -> int:
        """Apply the commit's statistics and a new generation to its scope row, creating it if needed; its key."""
        params = {
            'conv': change.conversation_id,
            'generation': uuid.uuid4().hex,
            'docs': change.docs_delta,
            'length': change.length_delta,
        }
        await cur.execute(
            self._db.sql(
                'UPDATE {index_scopes} SET generation = %(generation)s, docs = docs + %(docs)s,'
                ' length = length + %(length)s WHERE scope_key = ' + _SCOPE_KEY + ' RETURNING scope_key'
            ),
            params,
        )
        found = await cur.fetchone()
        if found is None:
            await cur.execute(self._db.sql(_NEW_SCOPE[change.conversation_id is None]), params)
            found = await cur.fetchone()
            assert found is not None, 'an upsert with RETURNING returns its row'
        return found[0]

    async def _put_run(self, cur: AsyncCursor[TupleRow], change: RunCommit, scope_key: int, run_key: int | None) -> int:
        """Write the run's index row; its key."""
        params: dict[str, Any] = {
            'run_id': change.run_id,
            'scope': scope_key,
            'started_at': change.started_at,
            'seen': change.seen,
            'first': change.first,
            'lengths': change.lengths,
            'seqs': change.seqs,
            'roles': change.roles,
            'times': change.times,
            'state': change.state,
            'run_key': run_key,
        }
        if run_key is not None:
            await cur.execute(
                self._db.sql(
                    'UPDATE {index_runs} SET scope_key = %(scope)s, started_at = %(started_at)s, seen = %(seen)s,'
                    ' first = %(first)s, lengths = %(lengths)s, seqs = %(seqs)s, roles = %(roles)s,'
                    ' times = %(times)s, state = %(state)s WHERE run_key = %(run_key)s'
                ),
                params,
            )
            return run_key
        await cur.execute(
            self._db.sql(
                'INSERT INTO {index_runs}'
                ' (run_id, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
                ' VALUES (%(run_id)s, %(scope)s, %(started_at)s, %(seen)s, %(first)s, %(lengths)s, %(seqs)s,'
                ' %(roles)s, %(times)s, %(state)s) RETURNING run_key'
            ),
            params,
        )
        found = await cur.fetchone()
        assert found is not None, 'an INSERT with RETURNING returns its row'
        return found[0]

    async def _take_out(self, cur: AsyncCursor[TupleRow], change: RunCommit, scope_key: int, run_key: int) -> None:
        """Take the run's postings of its `postings_set` terms out of every chunk holding them."""
        if not change.postings_set:
            return
        sql = self._db.sql
        await cur.execute(
            sql(
                'SELECT term, chunk, postings FROM {index_postings}'
                ' WHERE scope_key = %s AND term = ANY(%s::text[]) FOR UPDATE'
            ),
            (scope_key, list(change.postings_set)),
        )
        for term, number, data in await cur.fetchall():
            kept = without_run(number, bytes(data), run_key)
            if kept is None:
                continue
            if kept:
                await cur.execute(
                    sql('UPDATE {index_postings} SET postings = %s WHERE scope_key = %s AND term = %s AND chunk = %s'),
                    (kept, scope_key, term, number),
                )
            else:
                await cur.execute(
                    sql('DELETE FROM {index_postings} WHERE scope_key = %s AND term = %s AND chunk = %s'),
                    (scope_key, term, number),
                )

    async def _append(self, cur: AsyncCursor[TupleRow], appended: dict[tuple[int, str], bytes]) -> None:
        """Append to each `(scope key, term)`'s open tail in one statement, then seal the tails that are full."""
        if not appended:
            return
        sql = self._db.sql
        keys = sorted(appended)
        await cur.execute(
            sql(_APPEND),
            {
                'scopes': [scope_key for scope_key, _ in keys],
                'terms': [term for _, term in keys],
                'postings': [appended[key] for key in keys],
            },
        )
        due = [(scope_key, term) for scope_key, term, size in await cur.fetchall() if size >= SEAL_BYTES]
        if not due:
            return
        await cur.execute(
            sql(
                'SELECT o.scope_key, o.term, o.postings, (SELECT MAX(c.chunk) FROM {index_postings} AS c'
                ' WHERE c.scope_key = o.scope_key AND c.term = o.term)'
                ' FROM {index_postings} AS o JOIN unnest(%s::bigint[], %s::text[]) AS d (scope_key, term)'
                ' ON o.scope_key = d.scope_key AND o.term = d.term WHERE o.chunk = 0'
            ),
            ([scope_key for scope_key, _ in due], [term for _, term in due]),
        )
        sealed = [
            (scope_key, term, last + 1 + n, chunk)
            for scope_key, term, data, last in await cur.fetchall()
            for n, chunk in enumerate(seal_tail(bytes(data)))
        ]
        await cur.execute(
            sql(
                'INSERT INTO {index_postings} (scope_key, term, chunk, postings)'
                ' SELECT * FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::bytea[])'
            ),
            tuple(list(column) for column in zip(*sealed, strict=True)),
        )
        await cur.execute(
            sql(
                'DELETE FROM {index_postings} AS o USING unnest(%s::bigint[], %s::text[]) AS d (scope_key, term)'
                ' WHERE o.scope_key = d.scope_key AND o.term = d.term AND o.chunk = 0'
            ),
            ([scope_key for scope_key, _ in due], [term for _, term in due]),
        )


async def lock_conversation(cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str | None) -> None:
    """Take the conversation's index lock until the transaction ends (see the module docstring)."""
    await cur.execute(
        'SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))',
        (f'durable_recall.index:{db.schema or ""}:{conversation_id or ""}',),
    )


async def forget_conversation(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str, run_ids: Sequence[str]
) -> None:
    """Delete a conversation's pending marks and index rows, in the delete's transaction, under its lock."""
    await cur.execute(
        db.sql(
            'WITH pending AS (DELETE FROM {pending}'
            ' WHERE conversation_id = %(conv)s AND run_id = ANY(%(runs)s::text[])),'
            ' scope AS (DELETE FROM {index_scopes} WHERE conversation_id = %(conv)s RETURNING scope_key),'
            ' terms AS (DELETE FROM {index_postings} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' hashes AS (DELETE FROM {index_hashes} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' runs AS (DELETE FROM {index_runs} WHERE scope_key IN (SELECT scope_key FROM scope)) ' + _BUMP_GENERATION
        ),
        {'conv': conversation_id, 'runs': list(run_ids), 'generation': uuid.uuid4().hex},
    )
