"""The Postgres store's half of the search index: the `{pending}` and `{index_*}` tables.

Reads are single statements, so each sees one snapshot without a stricter isolation level.

A commit and a conversation's deletion first take a transaction-scoped advisory lock named after
the conversation (`lock_conversation`), so the two never interleave: a commit either lands wholly
before a deletion (which then removes it) or wholly after (and finds its run gone, or, for a run
registered meanwhile, starts the conversation's scope afresh). Commits of one conversation queue
on that lock too, which also serialises the creation of its scope row. Under those locks a
commit is the index layer's `apply_commits` over `PostgresIndexWriter`, which locks each run's
row (so a save or a deletion of the run waits for it). Lists of terms and hashes travel as arrays
(`unnest`, `= ANY`). Rare words' open tails are read from their groups (`_groups`) in the same
statement as other terms' rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, LiteralString

from ...index import (
    IndexedRunRow,
    PostingsRow,
    RunCommit,
    ScopeSpans,
    ScopeStatus,
    ScopeView,
    SpansWanted,
    apply_commits,
)
from .._postgres_migrations import POSTGRES_INDEX_RESET
from .._run_rows import indexed_run
from ._groups import BUCKET_SQL, group_terms
from ._index_writer import BUMP_GENERATION, SCOPE_KEY, STORE_GENERATION, IndexDatabase, PostgresIndexWriter
from ._search_reads import postings_of, scope_view, unpack_spans

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

__all__ = ('PostgresIndex', 'forget_conversation', 'lock_conversation')

_PENDING: LiteralString = (
    'ARRAY(SELECT p.run_id FROM {pending} AS p JOIN {runs} AS r ON r.run_id = p.run_id'
    ' WHERE p.conversation_id = %(pending)s ORDER BY r.started_at, r.run_id)'
)

_STATUS_SCOPE: LiteralString = (
    'SELECT s.generation, s.docs, s.length, ' + _PENDING + ' FROM (VALUES (1)) AS one (x)'
    ' LEFT JOIN {index_scopes} AS s ON s.scope_key = ' + SCOPE_KEY
)

_STATUS_ALL: LiteralString = (
    'SELECT ' + STORE_GENERATION + ', t.docs, t.length,'
    ' ARRAY(SELECT p.run_id FROM {pending} AS p JOIN {runs} AS r ON r.run_id = p.run_id'
    ' ORDER BY r.started_at, r.run_id)'
    ' FROM (SELECT COALESCE(SUM(docs), 0)::bigint AS docs, COALESCE(SUM(length), 0)::bigint AS length'
    ' FROM {index_scopes}) AS t'
)

_LOCK_INDEX: LiteralString = (
    'LOCK TABLE {pending}, {index_scopes}, {index_runs}, {index_postings}, {index_groups}, {index_hashes}'
    ' IN EXCLUSIVE MODE'
)


_RUN_COLUMNS: LiteralString = 'run_key, run_id, scope_key, seen, first, lengths, seqs, roles, times, state, started_at'
_LIST_COLUMNS: LiteralString = 'run_key, run_id, scope_key, seen, first, lengths'

_SCOPE_RUNS: LiteralString = 'SELECT ' + _LIST_COLUMNS + ' FROM {index_runs}'
_SCOPE_RUNS_ORDER: LiteralString = ' ORDER BY started_at, run_id'

_SPANS: LiteralString = (
    "SELECT string_agg(int8send(run_key) || int4send(first) || set_byte('\\x00'::bytea, 0, least(length(lengths), 6))"
    " || substring(lengths || '\\x000000000000'::bytea FROM 1 FOR 6), ''::bytea" + _SCOPE_RUNS_ORDER + ')'
    ' FROM {index_runs} WHERE scope_key = ' + SCOPE_KEY
)
"""A conversation's spans (`scope_spans`), packed into one value in one sort: per run, in order, its key,
its `first`, and the head of its `lengths` (flags and count: all a span needs), as `_SPAN`."""

_BUCKET: LiteralString = BUCKET_SQL.replace('{term}', 't').replace('{bits}', 's.group_bits')

_POSTINGS: LiteralString = (
    'SELECT scope_key, term, chunk, postings, 0 FROM {index_postings} WHERE term = ANY(%(terms)s::text[])'
    ' AND scope_key = ANY(ARRAY(SELECT scope_key FROM scopes))'
    ' UNION ALL SELECT g.scope_key, NULL, b.bits, g.terms, g.bucket FROM (SELECT DISTINCT s.scope_key,'
    ' s.group_bits AS bits, ' + _BUCKET + ' AS bucket FROM scopes AS s, unnest(%(terms)s::text[]) AS t) AS b'
    ' JOIN {index_groups} AS g ON g.scope_key = b.scope_key AND g.bucket = b.bucket'
)
"""The terms' own rows, and the groups their open tails would be in, of the scopes in `scopes`.

A group comes as `(scope key, NULL, the scope's group bits, the group, its bucket)`."""

_ONE_SCOPE: LiteralString = (
    'WITH scopes AS (SELECT scope_key, group_bits FROM {index_scopes} WHERE scope_key = ' + SCOPE_KEY + ') '
)
_ALL_SCOPES: LiteralString = 'WITH scopes AS (SELECT scope_key, group_bits FROM {index_scopes}) '


class PostgresIndex:
    """`IndexStorage` over the Postgres store's connector."""

    def __init__(self, db: IndexDatabase) -> None:
        """Keep the store's connector (or a conversation store's); nothing connects until a method is called."""
        self._db = db

    def __repr__(self) -> str:
        return f'PostgresIndex({self._db.describe()})'

    async def status(self, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
        query = _STATUS_ALL if all_scopes else _STATUS_SCOPE
        params = {} if all_scopes else {'conv': conversation_id, 'pending': conversation_id or ''}
        async with self._db.read() as cur:
            await cur.execute(self._db.sql(query), params)
            row = await cur.fetchone()
        assert row is not None, 'the query selects from a one-row relation'
        generation, docs, length, pending = row
        return ScopeStatus(generation=generation or '', pending=list(pending), docs=docs or 0, length=length or 0)

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
        """Status, postings and spans in one statement (`ScopeViews`; see `_search_reads`)."""
        return await scope_view(
            self._db,
            conversation_id,
            all_scopes=all_scopes,
            terms=terms,
            known=known,
            known_terms=known_terms,
            spans=spans,
        )

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, IndexedRunRow]:
        if not run_ids:
            return {}
        async with self._db.read() as cur:
            query = 'SELECT ' + _RUN_COLUMNS + ' FROM {index_runs} WHERE run_id = ANY(%s::text[])'
            await cur.execute(self._db.sql(query), (list(run_ids),))
            rows = {row[1]: indexed_run(*row) for row in await cur.fetchall()}
        return {run_id: rows[run_id] for run_id in run_ids if run_id in rows}

    async def runs_by_key(self, run_keys: Sequence[int]) -> dict[int, IndexedRunRow]:
        if not run_keys:
            return {}
        async with self._db.read() as cur:
            query = 'SELECT ' + _RUN_COLUMNS + ' FROM {index_runs} WHERE run_key = ANY(%s::bigint[])'
            await cur.execute(self._db.sql(query), (list(run_keys),))
            return {row[0]: indexed_run(*row) for row in await cur.fetchall()}

    async def scope_runs(self, conversation_id: str | None, *, all_scopes: bool) -> list[IndexedRunRow]:
        query = (
            _SCOPE_RUNS + _SCOPE_RUNS_ORDER
            if all_scopes
            else _SCOPE_RUNS + ' WHERE scope_key = ' + SCOPE_KEY + _SCOPE_RUNS_ORDER
        )
        async with self._db.read() as cur:
            await cur.execute(self._db.sql(query), {} if all_scopes else {'conv': conversation_id})
            rows = await cur.fetchall()
        return [
            indexed_run(run_key, run_id, scope_key, seen, first, lengths, b'', b'', b'', b'')
            for run_key, run_id, scope_key, seen, first, lengths in rows
        ]

    async def scope_spans(self, conversation_id: str | None) -> ScopeSpans:
        async with self._db.read() as cur:
            await cur.execute(self._db.sql(_SPANS), {'conv': conversation_id})
            row = await cur.fetchone()
        return unpack_spans(b'' if row is None or row[0] is None else bytes(row[0]))

    async def postings(
        self, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[PostingsRow]]:
        if not terms:
            return {}
        # Keyed by scope first: every scope is looked up by key, never scanned for.
        query = (_ALL_SCOPES if all_scopes else _ONE_SCOPE) + _POSTINGS
        asked = list(dict.fromkeys(terms))
        async with self._db.read() as cur:
            await cur.execute(self._db.sql(query), {'terms': asked, 'conv': conversation_id})
            rows = await cur.fetchall()
        return postings_of(asked, rows)

    async def inherited(self, conversation_id: str, hashes: Sequence[bytes], *, exclude_run_id: str) -> set[bytes]:
        if not hashes:
            return set()
        async with self._db.read() as cur:
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

    async def terms(self, conversation_id: str | None, *, all_scopes: bool) -> list[str]:
        query: LiteralString = 'SELECT DISTINCT term, NULL::bytea FROM {index_postings}'
        groups: LiteralString = ' UNION ALL SELECT NULL, terms FROM {index_groups}'
        if not all_scopes:
            query += ' WHERE scope_key = ' + SCOPE_KEY
            groups += ' WHERE scope_key = ' + SCOPE_KEY
        async with self._db.read() as cur:
            await cur.execute(self._db.sql(query + groups), {} if all_scopes else {'conv': conversation_id})
            rows = await cur.fetchall()
        own = {term for term, _ in rows if term is not None}
        return sorted(own.union(group_terms(bytes(data) for term, data in rows if term is None)))

    async def rebuild(self) -> int:
        async with self._db.transaction() as cur:
            # Exclusive against catch-up commits and saves' pending marks, not against reads.
            await cur.execute(self._db.sql(_LOCK_INDEX))
            for statement in (*POSTGRES_INDEX_RESET, 'DELETE FROM {index_groups}'):
                await cur.execute(self._db.sql(statement))
            await cur.execute(self._db.sql(BUMP_GENERATION), {'generation': uuid.uuid4().hex})
            await cur.execute(self._db.sql('SELECT COUNT(*) FROM {pending}'))
            row = await cur.fetchone()
        return 0 if row is None else int(row[0])

    async def commit(self, change: RunCommit) -> None:
        await self.commit_many([change])

    async def commit_many(self, changes: Sequence[RunCommit]) -> None:
        # Pipelined: the locks, the read and `BEGIN` travel together, as do the writes and `COMMIT`.
        async with self._db.transaction(pipeline=True) as cur:
            # Every conversation's lock first, in one order, so two batches cannot deadlock.
            for conversation_id in sorted({change.conversation_id or '' for change in changes}):
                await lock_conversation(cur, self._db, conversation_id or None)
            writer = PostgresIndexWriter(cur, self._db)
            if not any(change.postings_set for change in changes):
                await writer.read_state(changes)  # one statement, after the locks (see `_commit_state`)
            await apply_commits(writer, changes)
            await writer.flush()


async def lock_conversation(cur: AsyncCursor[TupleRow], db: IndexDatabase, conversation_id: str | None) -> None:
    """Take the conversation's index lock until the transaction ends (see the module docstring)."""
    await cur.execute(
        'SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))',
        (f'durable_recall.index:{db.schema or ""}:{conversation_id or ""}',),
    )


async def forget_conversation(
    cur: AsyncCursor[TupleRow], db: IndexDatabase, conversation_id: str, run_ids: Sequence[str]
) -> None:
    """Delete a conversation's pending marks and index rows, in the delete's transaction, under its lock."""
    await cur.execute(
        db.sql(
            'WITH pending AS (DELETE FROM {pending}'
            ' WHERE conversation_id = %(conv)s AND run_id = ANY(%(runs)s::text[])),'
            ' scope AS (DELETE FROM {index_scopes} WHERE conversation_id = %(conv)s RETURNING scope_key),'
            ' terms AS (DELETE FROM {index_postings} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' groups AS (DELETE FROM {index_groups} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' hashes AS (DELETE FROM {index_hashes} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' runs AS (DELETE FROM {index_runs} WHERE scope_key IN (SELECT scope_key FROM scope)) ' + BUMP_GENERATION
        ),
        {'conv': conversation_id, 'runs': list(run_ids), 'generation': uuid.uuid4().hex},
    )
