"""The Postgres store's erasure: deleting a run or an idle conversation, and scrubbing the tables afterwards.

A deleted row is a dead tuple: its bytes stay in the table's (and its TOAST table's and indexes')
pages until the space is reused, and plain `VACUUM` marks the space free without overwriting it.
`scrub` runs `VACUUM FULL` on the step store's tables, which writes each table and its indexes
anew into fresh files and unlinks the old ones; it holds an exclusive lock on each table while it
rewrites it (readers and writers of the store wait). What Postgres keeps outside the tables (WAL
segments until they are recycled, archived WAL, base backups, replicas' copies) is outside its reach:
docs/erasure.md says how long each lasts.

A run of the same conversation may hold references to the deleted run's log entries: those
stretches become copies of the bodies before the run's rows go (see `stores.sqlite._erase`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, LiteralString

from ...base import CorruptSnapshotError
from .._erasure import ScrubReport
from .._pending import PendingMark
from ._index import forget_conversation, lock_conversation
from ._index_writer import BUMP_GENERATION, SCOPE_KEY
from ._reads import logs

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

    from ._connect import PostgresConnector

__all__ = (
    'SCRUBBED_TABLES',
    'delete_idle',
    'delete_run',
    'delete_runs_of',
    'idle_conversations',
    'pending_marks',
    'scrub',
)

SCRUBBED_TABLES: tuple[LiteralString, ...] = (
    'messages',
    'message_refs',
    'snapshots',
    'runs',
    'pending',
    'vectors',
    'index_postings',
    'index_groups',
    'index_hashes',
    'index_runs',
    'index_scopes',
    'conversation_keys',
)
"""The tables a delete touches, which `scrub` rewrites."""

_LOG_TABLES: tuple[LiteralString, ...] = ('vectors', 'messages', 'message_refs', 'snapshots')
"""A run's rows besides its run row and index, each keyed by `run_id`."""

_ACTIVITY = (
    'GREATEST(r.started_at, COALESCE((SELECT MAX(s.saved_at) FROM {snapshots} AS s WHERE s.run_id = r.run_id),'
    ' r.started_at))'
)


async def idle_conversations(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, before: datetime
) -> list[tuple[str, datetime]]:
    """Conversations whose last run start and snapshot save are before `before`, oldest first."""
    await cur.execute(
        db.sql(
            f'SELECT conversation_id, MAX({_ACTIVITY}) AS last FROM {{runs}} AS r WHERE conversation_id IS NOT NULL'
            ' GROUP BY conversation_id HAVING MAX(' + _ACTIVITY + ') < %s ORDER BY last, conversation_id'
        ),
        (before,),
    )
    return [(conversation_id, last) for conversation_id, last in await cur.fetchall()]


async def delete_runs_of(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str, before: datetime | None
) -> int | None:
    """Delete a conversation's runs and all they hold, in the cursor's transaction; the run count.

    With `before`, only if every deleted run started, and saved its last snapshot, before it:
    otherwise `None`, and the caller rolls back. The run rows are deleted first, which waits for
    any save holding one and locks them against later saves (and a save that builds on one holds
    it shared); so the activity checked is what the delete removes.
    """
    await lock_conversation(cur, db, conversation_id)
    await cur.execute(
        db.sql('DELETE FROM {runs} WHERE conversation_id = %s RETURNING run_id, started_at'), (conversation_id,)
    )
    found = await cur.fetchall()
    run_ids = [row[0] for row in found]
    if before is not None and run_ids:
        await cur.execute(db.sql('SELECT MAX(saved_at) FROM {snapshots} WHERE run_id = ANY(%s)'), (run_ids,))
        (saved,) = await cur.fetchone() or (None,)
        if max(started for _, started in found) >= before or (saved is not None and saved >= before):
            return None
    if run_ids:
        for table in _LOG_TABLES:
            await cur.execute(db.sql('DELETE FROM {' + table + '} WHERE run_id = ANY(%s)'), (run_ids,))
    await forget_conversation(cur, db, conversation_id, run_ids)
    # The journal codecs' keys: the engines' copies of the conversation become unreadable.
    await cur.execute(db.sql('DELETE FROM {conversation_keys} WHERE conversation_id = %s'), (conversation_id,))
    return len(run_ids)


async def delete_idle(db: PostgresConnector, conversation_id: str, before: datetime) -> int | None:
    """`delete_runs_of` with `before`, in a transaction of its own, rolled back when the conversation is active."""
    try:
        async with db.transaction() as cur:
            deleted = await delete_runs_of(cur, db, conversation_id, before)
            if deleted is None:
                raise _StillActive
    except _StillActive:
        return None
    return deleted


class _StillActive(Exception):
    """Rolls back a delete of a conversation that was active after all (`delete_idle`)."""


async def pending_marks(db: PostgresConnector) -> list[PendingMark]:
    """Every pending row as stored, with its run's conversation and last snapshot (`PendingMarks`; for `check`)."""
    async with db.read() as cur:
        await cur.execute(
            db.sql(
                'SELECT p.conversation_id, p.run_id, p.upto, r.run_id IS NOT NULL, r.conversation_id,'
                ' (SELECT MAX(s.idx) FROM {snapshots} AS s WHERE s.run_id = p.run_id)'
                ' FROM {pending} AS p LEFT JOIN {runs} AS r ON r.run_id = p.run_id ORDER BY p.run_id'
            )
        )
        return [PendingMark(*row) for row in await cur.fetchall()]


async def delete_run(cur: AsyncCursor[TupleRow], db: PostgresConnector, run_id: str) -> bool:
    """Delete one run with its snapshots, log, vectors and pending mark, in the cursor's transaction.

    Runs referring to its entries get copies of the bodies first; its conversation's index is
    emptied and every remaining run marked pending (the next catch-up rebuilds it without the run).

    Raises:
        CorruptSnapshotError: A run referring to its entries has one whose body is already gone.
    """
    await cur.execute(db.sql('SELECT conversation_id FROM {runs} WHERE run_id = %s'), (run_id,))
    found = await cur.fetchone()
    conversation_id: str | None = None if found is None else found[0]
    await lock_conversation(cur, db, conversation_id)
    await cur.execute(db.sql('DELETE FROM {runs} WHERE run_id = %s RETURNING run_id'), (run_id,))
    held = await cur.fetchone() is not None
    await _own_inherited(cur, db, run_id)
    removed = 0
    for table in (*_LOG_TABLES, 'pending'):
        await cur.execute(db.sql('DELETE FROM {' + table + '} WHERE run_id = %s'), (run_id,))
        removed += cur.rowcount if table == 'snapshots' else 0
    if held:
        await _reindex_scope(cur, db, conversation_id)
    return held or removed > 0


async def _own_inherited(cur: AsyncCursor[TupleRow], db: PostgresConnector, run_id: str) -> None:
    """Turn every other run's references to `run_id`'s entries into copies of their bodies."""
    await cur.execute(
        db.sql('SELECT run_id, seq, count FROM {message_refs} WHERE ref_run_id = %s AND run_id <> %s'), (run_id, run_id)
    )
    for holder, seq, count in await cur.fetchall():
        bodies = (await logs(cur, db, [(holder, seq, seq + count)])).get(holder, {})
        missing = [at for at in range(seq, seq + count) if bodies.get(at) is None]
        if missing:
            raise CorruptSnapshotError(
                holder, -1, f'log entries {missing} are referenced but their bodies are gone, so they cannot be copied'
            )
        await cur.execute(db.sql('DELETE FROM {message_refs} WHERE run_id = %s AND seq = %s'), (holder, seq))
        copied = [(at, bodies[at]) for at in range(seq, seq + count)]
        await cur.executemany(
            db.sql('INSERT INTO {messages} (run_id, seq, body, data) VALUES (%s, %s, %s, %s)'),
            [
                (holder, at, body if isinstance(body, str) else None, body if isinstance(body, bytes) else None)
                for at, body in copied
            ],
        )


async def _reindex_scope(cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str | None) -> None:
    """Empty the conversation's index and mark its remaining runs pending: the next catch-up rebuilds it."""
    await cur.execute(
        db.sql(
            f'WITH scope AS (SELECT scope_key FROM {SCOPE_KEY} AS k (scope_key) WHERE scope_key IS NOT NULL),'
            ' terms AS (DELETE FROM {index_postings} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' groups AS (DELETE FROM {index_groups} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' hashes AS (DELETE FROM {index_hashes} WHERE scope_key IN (SELECT scope_key FROM scope)),'
            ' runs AS (DELETE FROM {index_runs} WHERE scope_key IN (SELECT scope_key FROM scope))'
            ' DELETE FROM {index_scopes} WHERE scope_key IN (SELECT scope_key FROM scope)'
        ),
        {'conv': conversation_id},
    )
    await cur.execute(
        db.sql(
            'INSERT INTO {pending} (conversation_id, run_id, upto)'
            " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx)"
            ' FROM {runs} AS r JOIN {snapshots} AS s ON s.run_id = r.run_id'
            ' WHERE r.conversation_id IS NOT DISTINCT FROM %(conv)s GROUP BY r.run_id, r.conversation_id'
            ' ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = GREATEST({pending}.upto, EXCLUDED.upto)'
        ),
        {'conv': conversation_id},
    )
    await cur.execute(db.sql(BUMP_GENERATION), {'generation': uuid.uuid4().hex})


async def scrub(db: PostgresConnector, tables: tuple[LiteralString, ...] = SCRUBBED_TABLES) -> ScrubReport:
    """`VACUUM FULL` the tables a delete touches (see the module docstring), outside any transaction.

    Args:
        db: The store's connector.
        tables: The placeholders (`messages`, ...) of the tables to rewrite; a conversation store passes its own.
    """
    import psycopg

    try:
        async with db.read() as cur:
            for table in tables:
                await cur.execute(db.sql('VACUUM FULL {' + table + '}'))
    except psycopg.errors.ActiveSqlTransaction as error:
        return ScrubReport(
            complete=False,
            detail=f'the pool hands out connections inside transactions, where VACUUM cannot run ({error})',
        )
    return ScrubReport(
        complete=True,
        detail=(
            'rewrote the touched tables with VACUUM FULL; copies in WAL segments, archives, backups and replicas '
            'remain until those are recycled or expire'
        ),
    )
