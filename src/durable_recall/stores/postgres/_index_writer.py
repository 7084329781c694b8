"""The Postgres store's index writes: `IndexWriter` on a cursor inside the commit's transaction.

Every method awaits the real connection. The commit (`PostgresIndex.commit_many`) has taken its
conversations' advisory locks before the port is used; `stored_run` then locks the run's row, so
a save or a deletion of the run waits for the commit. Lists travel as arrays (`unnest`, `= ANY`),
so a batch's thousands of postings are one statement each kind. A rare word's open tail lives in a
group row shared with other rare words of its scope (`_groups`, written by `_group_writer`); a
term's rows of its own are looked up first.

A commit that only appends (no earlier position of a run changed) reads everything first
(`read_state`, see `_commit_state`); the writer then answers from what was read and sends its
writes as one statement at the end, so that it never waits for the server in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, LiteralString, Protocol

from ...index import OPEN, FullTail, RunCommit, StoredRun, TermChunk
from ._commit_state import CommitState, DeferredWrites, RunRow, read_state
from ._group_writer import GroupWriter

if TYPE_CHECKING:
    from psycopg import AsyncCursor, sql
    from psycopg.rows import TupleRow

__all__ = ('BUMP_GENERATION', 'SCOPE_KEY', 'STORE_GENERATION', 'IndexDatabase', 'PostgresIndexWriter')


class IndexDatabase(Protocol):
    """Where the index's tables are: the step store's connector, or a conversation store's (`drc_` tables).

    Query templates name tables by placeholder (`{index_runs}`, `{pending}`, `{runs}`, `{meta}`, ...);
    the connector fills in its own, schema-qualified names.
    """

    @property
    def schema(self) -> str | None:
        """The Postgres schema (part of the index's advisory-lock names)."""
        ...

    def describe(self) -> str:
        """Where the data lives, without secrets."""
        ...

    def sql(self, template: LiteralString) -> sql.Composed:
        """The template with its table placeholders filled."""
        ...

    def transaction(
        self, *, snapshot: bool = False, pipeline: bool = False
    ) -> AbstractAsyncContextManager[AsyncCursor[TupleRow]]:
        """A cursor inside one transaction (`pipeline`: statements sent without waiting for answers)."""
        ...

    def read(self) -> AbstractAsyncContextManager[AsyncCursor[TupleRow]]:
        """A cursor for reads of one statement each, outside a transaction."""
        ...


SCOPE_KEY: LiteralString = (
    '(SELECT scope_key FROM {index_scopes} WHERE conversation_id = %(conv)s'
    ' UNION ALL SELECT 0 WHERE %(conv)s::text IS NULL)'
)
"""The scope key of `%(conv)s`: 0 for `NULL`, `NULL` when the conversation has no scope row."""

STORE_GENERATION: LiteralString = (
    "md5(COALESCE((SELECT value FROM {meta} WHERE key = 'index_generation'), '')"
    " || COALESCE((SELECT string_agg(generation, ',' ORDER BY scope_key) FROM {index_scopes}), ''))"
)
"""The store-wide index generation (`status(all_scopes=True)`): it changes whenever any scope's does (a
commit), a scope goes (a deletion), or the stored value is bumped (a deletion, a rebuild, a migration)."""

BUMP_GENERATION: LiteralString = (
    "INSERT INTO {meta} (key, value) VALUES ('index_generation', %(generation)s)"
    ' ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value'
)

_SCOPE_UPDATE: LiteralString = (
    ' generation = EXCLUDED.generation, docs = s.docs + EXCLUDED.docs, length = s.length + EXCLUDED.length'
    ' RETURNING scope_key, group_bits'
)
_NEW_SCOPE: dict[bool, LiteralString] = {
    True: 'INSERT INTO {index_scopes} AS s (scope_key, conversation_id, generation, docs, length)'
    ' VALUES (0, NULL, %(generation)s, %(docs)s, %(length)s) ON CONFLICT (scope_key) DO UPDATE SET' + _SCOPE_UPDATE,
    False: 'INSERT INTO {index_scopes} AS s (conversation_id, generation, docs, length)'
    ' VALUES (%(conv)s, %(generation)s, %(docs)s, %(length)s) ON CONFLICT (conversation_id) DO UPDATE SET'
    + _SCOPE_UPDATE,
}

_APPEND: LiteralString = (
    'WITH new AS (SELECT * FROM unnest(%(scopes)s::bigint[], %(terms)s::text[], %(postings)s::bytea[])'
    ' AS new (scope_key, term, postings)),'
    ' appended AS (UPDATE {index_postings} AS t SET postings = t.postings || new.postings FROM new'
    ' WHERE t.scope_key = new.scope_key AND t.term = new.term AND t.chunk = 0'
    ' RETURNING t.scope_key, t.term, octet_length(t.postings) AS size),'
    ' sealed AS (SELECT DISTINCT o.scope_key, o.term FROM {index_postings} AS o JOIN new'
    ' ON o.scope_key = new.scope_key AND o.term = new.term WHERE o.chunk > 0)'
    ' SELECT scope_key, term, size FROM appended UNION ALL SELECT scope_key, term, -1 FROM sealed AS s'
    ' WHERE NOT EXISTS (SELECT FROM appended AS a WHERE a.scope_key = s.scope_key AND a.term = s.term)'
)
"""Append to the open tails of terms that have one of their own; name the terms with only sealed
chunks (size -1). Every other term's tail is grouped. One snapshot: `sealed` sees the rows as the
statement started, which the update does not change (it touches only open tails)."""

_NEW_TAILS: LiteralString = (
    'INSERT INTO {index_postings} (scope_key, term, chunk, postings)'
    ' SELECT scope_key, term, 0, postings FROM unnest(%s::bigint[], %s::text[], %s::bytea[])'
    ' AS new (scope_key, term, postings) RETURNING scope_key, term, octet_length(postings)'
)


class PostgresIndexWriter:
    """`IndexWriter` over a cursor in the commit's transaction (see the module docstring)."""

    def __init__(self, cur: AsyncCursor[TupleRow], db: IndexDatabase) -> None:
        """Write through `cur`, which the caller holds in a transaction; `db` fills in table names."""
        self._cur = cur
        self._sql = db.sql
        self._groups = GroupWriter(cur, db)
        self._grouped: set[tuple[int, str]] = set()
        """Terms whose open tail `chunks` found in a group (their tail is changed there)."""
        self._db = db
        self._state: CommitState | None = None
        self._writes = DeferredWrites()

    async def read_state(self, changes: Sequence[RunCommit]) -> None:
        """Read what committing `changes` needs, in one statement, and answer from it (`_commit_state`).

        Only for changes without `postings_set` (which read and rewrite chunks as they go).
        """
        assert not any(change.postings_set for change in changes), 'a rewrite reads its chunks itself'
        self._state = await read_state(self._cur, self._db, changes)
        self._groups.bits.update(self._state.scopes.values())
        self._groups.known = dict(self._state.groups)
        self._groups.deferred = self._writes.groups

    async def flush(self) -> None:
        """Send the writes decided from the read state (one statement; nothing when there are none)."""
        writes, self._writes = self._writes, DeferredWrites()
        if self._groups.deferred is not None:
            self._groups.deferred = self._writes.groups
        await writes.flush(self._cur, self._db)

    async def stored_run(self, run_id: str) -> StoredRun | None:
        if self._state is not None:
            return self._state.runs.get(run_id)
        cur, sql = self._cur, self._sql
        await cur.execute(sql('SELECT conversation_id FROM {runs} WHERE run_id = %s FOR UPDATE'), (run_id,))
        run = await cur.fetchone()
        if run is None:
            return None
        # A statement of its own, run after the locks: it sees every commit that held them.
        await cur.execute(sql('SELECT run_key, seen FROM {index_runs} WHERE run_id = %s'), (run_id,))
        indexed = await cur.fetchone()
        return StoredRun(run[0], *((None, None) if indexed is None else indexed))

    async def update_scope(self, conversation_id: str | None, *, docs: int, length: int, generation: str) -> int:
        known = None if self._state is None else self._state.scopes.get(conversation_id)
        if known is not None:
            self._writes.scope(known[0], docs=docs, length=length, generation=generation)
            return known[0]
        params = {'conv': conversation_id, 'generation': generation, 'docs': docs, 'length': length}
        await self._cur.execute(
            self._sql(
                'UPDATE {index_scopes} SET generation = %(generation)s, docs = docs + %(docs)s,'
                ' length = length + %(length)s WHERE scope_key = ' + SCOPE_KEY + ' RETURNING scope_key, group_bits'
            ),
            params,
        )
        found = await self._cur.fetchone()
        if found is None:
            await self._cur.execute(self._sql(_NEW_SCOPE[conversation_id is None]), params)
            found = await self._cur.fetchone()
            assert found is not None, 'an upsert with RETURNING returns its row'
        self._groups.bits[found[0]] = found[1]
        if self._state is not None:
            # A scope created here: it has no rows of terms or groups to read.
            self._state.scopes[conversation_id] = (found[0], found[1])
        return found[0]

    async def put_run(self, change: RunCommit, scope_key: int, run_key: int | None) -> int:
        if self._state is not None:
            new = run_key is None
            run_key = self._state.fresh_keys[change.run_id] if run_key is None else run_key
            self._writes.run(RunRow(run_key, scope_key, change), new=new)
            return run_key
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
            await self._cur.execute(
                self._sql(
                    'UPDATE {index_runs} SET scope_key = %(scope)s, started_at = %(started_at)s, seen = %(seen)s,'
                    ' first = %(first)s, lengths = %(lengths)s, seqs = %(seqs)s, roles = %(roles)s,'
                    ' times = %(times)s, state = %(state)s WHERE run_key = %(run_key)s'
                ),
                params,
            )
            return run_key
        await self._cur.execute(
            self._sql(
                'INSERT INTO {index_runs}'
                ' (run_id, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
                ' VALUES (%(run_id)s, %(scope)s, %(started_at)s, %(seen)s, %(first)s, %(lengths)s, %(seqs)s,'
                ' %(roles)s, %(times)s, %(state)s) RETURNING run_key'
            ),
            params,
        )
        found = await self._cur.fetchone()
        assert found is not None, 'an INSERT with RETURNING returns its row'
        return found[0]

    async def chunks(self, scope_key: int, terms: Sequence[str]) -> list[TermChunk]:
        await self._cur.execute(
            self._sql(
                'SELECT term, chunk, postings FROM {index_postings}'
                ' WHERE scope_key = %s AND term = ANY(%s::text[]) FOR UPDATE'
            ),
            (scope_key, list(terms)),
        )
        found = [TermChunk(term, number, bytes(data)) for term, number, data in await self._cur.fetchall()]
        owning = {chunk.term for chunk in found}
        grouped = await self._groups.tails(scope_key, [term for term in terms if term not in owning])
        self._grouped.update((scope_key, term) for term in grouped)
        return found + [TermChunk(term, OPEN, tail) for term, tail in grouped.items()]

    async def set_chunk(self, scope_key: int, term: str, chunk: int, postings: bytes) -> None:
        if chunk == OPEN and (scope_key, term) in self._grouped:
            await self._groups.replace(scope_key, term, postings)
            return
        await self._cur.execute(
            self._sql('UPDATE {index_postings} SET postings = %s WHERE scope_key = %s AND term = %s AND chunk = %s'),
            (postings, scope_key, term, chunk),
        )

    async def delete_chunk(self, scope_key: int, term: str, chunk: int) -> None:
        if chunk == OPEN and (scope_key, term) in self._grouped:
            await self._groups.replace(scope_key, term, b'')
            self._grouped.discard((scope_key, term))
            return
        await self._cur.execute(
            self._sql('DELETE FROM {index_postings} WHERE scope_key = %s AND term = %s AND chunk = %s'),
            (scope_key, term, chunk),
        )

    async def append_tails(self, tails: Sequence[tuple[int, str, bytes]], *, full_at: int) -> list[FullTail]:
        if self._state is not None:
            return await self._append_known(self._state, tails, full_at=full_at)
        cur, sql = self._cur, self._sql
        await cur.execute(
            sql(_APPEND),
            {
                'scopes': [scope_key for scope_key, _, _ in tails],
                'terms': [term for _, term, _ in tails],
                'postings': [data for _, _, data in tails],
            },
        )
        sizes = {(scope_key, term): size for scope_key, term, size in await cur.fetchall()}
        new = [(scope_key, term, data) for scope_key, term, data in tails if sizes.get((scope_key, term)) == -1]
        new += await self._groups.append(
            [(scope_key, term, data) for scope_key, term, data in tails if (scope_key, term) not in sizes]
        )
        if new:
            await cur.execute(
                sql(_NEW_TAILS),
                ([scope_key for scope_key, _, _ in new], [term for _, term, _ in new], [data for _, _, data in new]),
            )
            sizes.update(((scope_key, term), size) for scope_key, term, size in await cur.fetchall())
        return await self._full([key for key, size in sizes.items() if size >= full_at])

    async def _append_known(
        self, state: CommitState, tails: Sequence[tuple[int, str, bytes]], *, full_at: int
    ) -> list[FullTail]:
        """`append_tails` decided from the read state: each term's own tail, a new tail, or its group."""
        sizes: dict[tuple[int, str], int] = {}
        grouped: list[tuple[int, str, bytes]] = []
        for scope_key, term, data in tails:
            own = state.own.get((scope_key, term))
            if own is None:
                grouped.append((scope_key, term, data))
            elif own.tail is None:  # only sealed chunks: a new tail of its own
                self._writes.new_tails.append((scope_key, term, data))
                sizes[scope_key, term] = len(data)
            else:
                self._writes.appended.append((scope_key, term, data))
                sizes[scope_key, term] = own.tail + len(data)
        for scope_key, term, data in await self._groups.append(grouped):
            self._writes.new_tails.append((scope_key, term, data))
            sizes[scope_key, term] = len(data)
        await self.flush()
        return await self._full([key for key, size in sizes.items() if size >= full_at])

    async def _full(self, due: list[tuple[int, str]]) -> list[FullTail]:
        """The whole open tails of these terms (due for sealing), with each term's last chunk number."""
        if not due:
            return []
        due.sort()
        cur, sql = self._cur, self._sql
        await cur.execute(
            sql(
                'SELECT o.scope_key, o.term, o.postings, (SELECT MAX(c.chunk) FROM {index_postings} AS c'
                ' WHERE c.scope_key = o.scope_key AND c.term = o.term)'
                ' FROM {index_postings} AS o JOIN unnest(%s::bigint[], %s::text[]) AS d (scope_key, term)'
                ' ON o.scope_key = d.scope_key AND o.term = d.term WHERE o.chunk = 0'
            ),
            ([scope_key for scope_key, _ in due], [term for _, term in due]),
        )
        return [FullTail(scope_key, term, bytes(data), last) for scope_key, term, data, last in await cur.fetchall()]

    async def seal_tails(self, sealed: Sequence[tuple[int, str, int, bytes]], tails: Sequence[tuple[int, str]]) -> None:
        await self._cur.execute(
            self._sql(
                'INSERT INTO {index_postings} (scope_key, term, chunk, postings)'
                ' SELECT * FROM unnest(%s::bigint[], %s::text[], %s::int[], %s::bytea[])'
            ),
            tuple(list(column) for column in zip(*sealed, strict=True)),
        )
        await self._cur.execute(
            self._sql(
                'DELETE FROM {index_postings} AS o USING unnest(%s::bigint[], %s::text[]) AS d (scope_key, term)'
                ' WHERE o.scope_key = d.scope_key AND o.term = d.term AND o.chunk = 0'
            ),
            ([scope_key for scope_key, _ in tails], [term for _, term in tails]),
        )

    async def add_hashes(self, scope_key: int, run_key: int, hashes: Sequence[bytes]) -> None:
        if self._state is not None:
            self._writes.hashes.extend((scope_key, digest, run_key) for digest in hashes)
            return
        await self._cur.execute(
            self._sql(
                'INSERT INTO {index_hashes} (scope_key, hash, run_key)'
                ' SELECT %s, new.hash, %s FROM unnest(%s::bytea[]) AS new (hash) ON CONFLICT DO NOTHING'
            ),
            (scope_key, run_key, list(hashes)),
        )

    async def clear_pending(self, conversation_id: str | None, run_id: str, upto: int) -> None:
        if self._state is not None:
            self._writes.clear(conversation_id or '', run_id, upto)
            return
        await self._cur.execute(
            self._sql(
                'DELETE FROM {pending} WHERE conversation_id = %(pending)s AND run_id = %(run)s AND upto <= %(upto)s'
            ),
            {'pending': conversation_id or '', 'run': run_id, 'upto': upto},
        )

    async def bump_generation(self, generation: str) -> None:
        """Nothing: on Postgres the store-wide generation is derived from the scopes' own (`STORE_GENERATION`).

        A commit already gives its scope a new generation. Writing the store-wide one too made every
        commit, of every conversation, update one row: concurrent commits queued on its lock until
        each committed, holding their connections meanwhile, which under load emptied the pool.
        """
