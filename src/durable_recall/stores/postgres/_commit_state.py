"""A Postgres index commit in two round trips: what it needs read in one statement, its writes in another.

Applied one primitive at a time (`apply_commits` over `IndexWriter`), a commit of one run asked the
server a dozen times while it held its conversation's lock: the run's row, its index row, the
scope, the run row written, the hashes, the pending mark, the tails, the groups read and written,
the new tails. Each answer was needed only because the next statement named a key or a size the
server returned. Read first, under the lock, everything the commit will look at (`read_state`: the
runs with their index keys and `seen`, a fresh key for a run never indexed, the scopes, which of
the commit's terms have rows of their own and how big their open tails are, and the groups the
others' tails are in), the commit decides every write itself and sends them as one statement
(`DeferredWrites.flush`): data-modifying `WITH` parts over arrays, which touch disjoint rows.

Only the conversation's advisory lock (taken by the statement before, so this one's snapshot sees
every commit that held it) keeps what was read current: commits, deletions and group writes of a
conversation all take it. The transaction runs in pipeline mode, so the lock, the read and the
`BEGIN` go in one round trip, and the writes with the `COMMIT` in the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, LiteralString

from ...index import RunCommit, StoredRun
from ._groups import BUCKET_SQL, unpack_group

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

    from ._index_writer import IndexDatabase

__all__ = ('CommitState', 'DeferredWrites', 'RunRow', 'read_state')

_BUCKET: LiteralString = BUCKET_SQL.replace('{term}', 'w.term').replace('{bits}', 'w.group_bits')

_STATE: LiteralString = (
    'WITH locked AS (SELECT run_id, conversation_id FROM {runs} WHERE run_id = ANY(%(runs)s::text[])'
    ' ORDER BY run_id FOR UPDATE),'
    ' scopes AS (SELECT scope_key, conversation_id, group_bits FROM {index_scopes}'
    ' WHERE conversation_id = ANY(%(conversations)s::text[]) OR (scope_key = 0 AND %(none)s)),'
    ' wanted AS (SELECT DISTINCT s.scope_key, s.group_bits, w.term FROM unnest(%(t_conv)s::text[], %(t_term)s::text[])'
    ' AS w (conversation_id, term) JOIN scopes AS s ON s.conversation_id IS NOT DISTINCT FROM w.conversation_id),'
    ' own AS (SELECT p.scope_key, p.term, MAX(p.chunk) AS last,'
    ' MAX(octet_length(p.postings)) FILTER (WHERE p.chunk = 0) AS tail'
    ' FROM {index_postings} AS p JOIN wanted AS w ON p.scope_key = w.scope_key AND p.term = w.term'
    ' GROUP BY p.scope_key, p.term)'
    " SELECT 'r', l.run_id, l.conversation_id, i.run_key, i.seen,"
    ' CASE WHEN i.run_key IS NULL THEN nextval(pg_get_serial_sequence(%(table)s, %(column)s)) END, NULL::bytea'
    ' FROM locked AS l LEFT JOIN {index_runs} AS i ON i.run_id = l.run_id'
    " UNION ALL SELECT 's', NULL, conversation_id, scope_key, group_bits, NULL, NULL FROM scopes"
    " UNION ALL SELECT 't', term, NULL, scope_key, last, tail, NULL FROM own"
    " UNION ALL SELECT 'g', NULL, NULL, g.scope_key, g.bucket, NULL, g.terms FROM {index_groups} AS g"
    ' JOIN (SELECT DISTINCT w.scope_key, ' + _BUCKET + ' AS bucket FROM wanted AS w'
    ' WHERE NOT EXISTS (SELECT FROM own AS o WHERE o.scope_key = w.scope_key AND o.term = w.term)) AS b'
    ' ON g.scope_key = b.scope_key AND g.bucket = b.bucket'
)
"""Everything a commit of `%(runs)s` reads (see the module docstring), as `(kind, ...)` rows:
`r` runs (run id, conversation, run key, seen, fresh key), `s` scopes (conversation, key, group bits),
`t` terms with rows of their own (term, scope key, last chunk, open tail size), `g` groups (key, bucket, terms)."""

_WRITE: LiteralString = (
    'WITH scopes AS (UPDATE {index_scopes} AS s SET generation = d.generation, docs = s.docs + d.docs,'
    ' length = s.length + d.length FROM unnest(%(s_key)s::bigint[], %(s_generation)s::text[],'
    ' %(s_docs)s::bigint[], %(s_length)s::bigint[]) AS d (scope_key, generation, docs, length)'
    ' WHERE s.scope_key = d.scope_key),'
    ' updated AS (UPDATE {index_runs} AS r SET scope_key = d.scope_key, started_at = d.started_at, seen = d.seen,'
    ' first = d.first, lengths = d.lengths, seqs = d.seqs, roles = d.roles, times = d.times, state = d.state'
    ' FROM unnest(%(u_key)s::bigint[], %(u_scope)s::bigint[], %(u_started)s::text[], %(u_seen)s::int[],'
    ' %(u_first)s::int[], %(u_lengths)s::bytea[], %(u_seqs)s::bytea[], %(u_roles)s::bytea[], %(u_times)s::bytea[],'
    ' %(u_state)s::bytea[]) AS d (run_key, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
    ' WHERE r.run_key = d.run_key),'
    ' inserted AS (INSERT INTO {index_runs}'
    ' (run_key, run_id, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
    ' SELECT * FROM unnest(%(i_key)s::bigint[], %(i_run)s::text[], %(i_scope)s::bigint[], %(i_started)s::text[],'
    ' %(i_seen)s::int[], %(i_first)s::int[], %(i_lengths)s::bytea[], %(i_seqs)s::bytea[], %(i_roles)s::bytea[],'
    ' %(i_times)s::bytea[], %(i_state)s::bytea[])),'
    ' hashes AS (INSERT INTO {index_hashes} (scope_key, hash, run_key)'
    ' SELECT * FROM unnest(%(h_scope)s::bigint[], %(h_hash)s::bytea[], %(h_run)s::bigint[]) ON CONFLICT DO NOTHING),'
    ' cleared AS (DELETE FROM {pending} AS p USING unnest(%(p_conv)s::text[], %(p_run)s::text[], %(p_upto)s::int[])'
    ' AS d (conversation_id, run_id, upto)'
    ' WHERE p.conversation_id = d.conversation_id AND p.run_id = d.run_id AND p.upto <= d.upto),'
    ' grouped AS (INSERT INTO {index_groups} AS g (scope_key, bucket, terms)'
    ' SELECT * FROM unnest(%(g_scope)s::bigint[], %(g_bucket)s::int[], %(g_terms)s::bytea[])'
    ' ON CONFLICT (scope_key, bucket) DO UPDATE SET terms = EXCLUDED.terms),'
    ' ungrouped AS (DELETE FROM {index_groups} AS g USING unnest(%(e_scope)s::bigint[], %(e_bucket)s::int[])'
    ' AS d (scope_key, bucket) WHERE g.scope_key = d.scope_key AND g.bucket = d.bucket),'
    ' tails AS (UPDATE {index_postings} AS t SET postings = t.postings || d.postings'
    ' FROM unnest(%(a_scope)s::bigint[], %(a_term)s::text[], %(a_postings)s::bytea[]) AS d (scope_key, term, postings)'
    ' WHERE t.scope_key = d.scope_key AND t.term = d.term AND t.chunk = 0)'
    ' INSERT INTO {index_postings} (scope_key, term, chunk, postings)'
    ' SELECT scope_key, term, 0, postings'
    ' FROM unnest(%(n_scope)s::bigint[], %(n_term)s::text[], %(n_postings)s::bytea[]) AS d (scope_key, term, postings)'
)
"""Every write a commit decided, in one statement: scopes, run rows (updated and new), hashes,
pending marks, groups (written whole, or deleted when emptied), appends to open tails and new
tails. The parts touch disjoint rows (one per key, merged here)."""


@dataclass(frozen=True)
class OwnRows:
    """A term's rows of its own in a scope: its last chunk number and its open tail's size (`None`: no tail)."""

    last: int
    tail: int | None


@dataclass
class CommitState:
    """What `read_state` read: the commit decides every write from it (see the module docstring)."""

    runs: dict[str, StoredRun] = field(default_factory=dict[str, StoredRun])
    fresh_keys: dict[str, int] = field(default_factory=dict[str, int])
    """A new run key for each run never indexed (drawn from its sequence; unused ones are skipped numbers)."""
    scopes: dict[str | None, tuple[int, int]] = field(default_factory=dict[str | None, tuple[int, int]])
    """Each scope's key and group bits, by conversation id (`None`: runs without one)."""
    own: dict[tuple[int, str], OwnRows] = field(default_factory=dict[tuple[int, str], OwnRows])
    groups: dict[tuple[int, int], dict[str, bytes] | None] = field(
        default_factory=dict[tuple[int, int], dict[str, bytes] | None]
    )
    """The groups the commit's other terms' tails are in, unpacked (`None`: one that does not unpack)."""


async def read_state(cur: AsyncCursor[TupleRow], db: IndexDatabase, changes: Sequence[RunCommit]) -> CommitState:
    """Read what the commit of `changes` needs, in one statement (the caller holds their conversations' locks)."""
    conversations = sorted({change.conversation_id for change in changes if change.conversation_id is not None})
    wanted = sorted(
        {(change.conversation_id, term) for change in changes for term in change.postings_add},
        key=lambda pair: (pair[0] is not None, pair[0] or '', pair[1]),
    )
    await cur.execute(
        db.sql(_STATE),
        {
            'runs': sorted({change.run_id for change in changes}),
            'conversations': conversations,
            'none': any(change.conversation_id is None for change in changes),
            't_conv': [conversation_id for conversation_id, _ in wanted],
            't_term': [term for _, term in wanted],
            'table': db.sql('{index_runs}').as_string(cur),
            'column': 'run_key',
        },
    )
    state = CommitState()
    for kind, text, conversation_id, key, number, extra, data in await cur.fetchall():
        if kind == 'r':
            state.runs[text] = StoredRun(conversation_id, key, number)
            if extra is not None:
                state.fresh_keys[text] = extra
        elif kind == 's':
            state.scopes[conversation_id] = (key, number)
        elif kind == 't':
            state.own[key, text] = OwnRows(number, extra)
        else:
            try:
                state.groups[key, number] = unpack_group(bytes(data))
            except ValueError:
                state.groups[key, number] = None
    return state


@dataclass(frozen=True)
class RunRow:
    """A run's index row to write (`RunCommit`'s arrays under its keys)."""

    run_key: int
    scope_key: int
    change: RunCommit


@dataclass
class DeferredWrites:
    """The writes a commit decided, merged by key, sent as one statement by `flush`."""

    scopes: dict[int, tuple[str, int, int]] = field(default_factory=dict[int, tuple[str, int, int]])
    updated: dict[int, RunRow] = field(default_factory=dict[int, RunRow])
    inserted: dict[int, RunRow] = field(default_factory=dict[int, RunRow])
    hashes: list[tuple[int, bytes, int]] = field(default_factory=list[tuple[int, bytes, int]])
    cleared: dict[tuple[str, str], int] = field(default_factory=dict[tuple[str, str], int])
    appended: list[tuple[int, str, bytes]] = field(default_factory=list[tuple[int, str, bytes]])
    new_tails: list[tuple[int, str, bytes]] = field(default_factory=list[tuple[int, str, bytes]])
    groups: dict[tuple[int, int], bytes] = field(default_factory=dict[tuple[int, int], bytes])
    """Packed groups by `(scope key, bucket)`, written whole (`b''`: deleted); `GroupWriter.deferred`."""

    def scope(self, scope_key: int, *, docs: int, length: int, generation: str) -> None:
        """Add to a scope's statistics and set its generation."""
        _, old_docs, old_length = self.scopes.get(scope_key, ('', 0, 0))
        self.scopes[scope_key] = (generation, old_docs + docs, old_length + length)

    def run(self, row: RunRow, *, new: bool) -> None:
        """Write a run's index row (the last change of a run wins; a new run stays an insert)."""
        if new or row.run_key in self.inserted:
            self.inserted[row.run_key] = row
        else:
            self.updated[row.run_key] = row

    def clear(self, conversation_id: str, run_id: str, upto: int) -> None:
        """Clear a run's pending mark if it names no snapshot after `upto`."""
        key = (conversation_id, run_id)
        self.cleared[key] = max(upto, self.cleared.get(key, upto))

    def empty(self) -> bool:
        """Whether there is nothing to send."""
        return not (
            self.scopes
            or self.updated
            or self.inserted
            or self.hashes
            or self.cleared
            or self.appended
            or self.new_tails
            or self.groups
        )

    async def flush(self, cur: AsyncCursor[TupleRow], db: IndexDatabase) -> None:
        """Send what was decided, in one statement (in a pipeline, without waiting for it); then drop this."""
        if self.empty():
            return
        updated, inserted = list(self.updated.values()), list(self.inserted.values())
        cleared = sorted(self.cleared.items())
        kept = sorted((key, data) for key, data in self.groups.items() if data)
        emptied = sorted(key for key, data in self.groups.items() if not data)
        params: dict[str, object] = {
            's_key': list(self.scopes),
            's_generation': [generation for generation, _, _ in self.scopes.values()],
            's_docs': [docs for _, docs, _ in self.scopes.values()],
            's_length': [length for _, _, length in self.scopes.values()],
            **_run_columns('u', updated),
            **_run_columns('i', inserted),
            'i_run': [row.change.run_id for row in inserted],
            'h_scope': [scope_key for scope_key, _, _ in self.hashes],
            'h_hash': [digest for _, digest, _ in self.hashes],
            'h_run': [run_key for _, _, run_key in self.hashes],
            'p_conv': [conversation_id for (conversation_id, _), _ in cleared],
            'p_run': [run_id for (_, run_id), _ in cleared],
            'p_upto': [upto for _, upto in cleared],
            'g_scope': [scope_key for (scope_key, _), _ in kept],
            'g_bucket': [bucket for (_, bucket), _ in kept],
            'g_terms': [data for _, data in kept],
            'e_scope': [scope_key for scope_key, _ in emptied],
            'e_bucket': [bucket for _, bucket in emptied],
            'a_scope': [scope_key for scope_key, _, _ in self.appended],
            'a_term': [term for _, term, _ in self.appended],
            'a_postings': [data for _, _, data in self.appended],
            'n_scope': [scope_key for scope_key, _, _ in self.new_tails],
            'n_term': [term for _, term, _ in self.new_tails],
            'n_postings': [data for _, _, data in self.new_tails],
        }
        await cur.execute(db.sql(_WRITE), params)


def _run_columns(prefix: str, rows: Sequence[RunRow]) -> dict[str, object]:
    return {
        f'{prefix}_key': [row.run_key for row in rows],
        f'{prefix}_scope': [row.scope_key for row in rows],
        f'{prefix}_started': [row.change.started_at for row in rows],
        f'{prefix}_seen': [row.change.seen for row in rows],
        f'{prefix}_first': [row.change.first for row in rows],
        f'{prefix}_lengths': [row.change.lengths for row in rows],
        f'{prefix}_seqs': [row.change.seqs for row in rows],
        f'{prefix}_roles': [row.change.roles for row in rows],
        f'{prefix}_times': [row.change.times for row in rows],
        f'{prefix}_state': [row.change.state for row in rows],
    }
