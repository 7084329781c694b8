"""The Postgres store's batch of snapshot writes: tips, bases and inserts inside one transaction.

What a batch inserts is planned by `BatchWrite`; this module locks the batch's runs, reads their
tips and any base, and inserts the planned rows (and the runs' pending marks) in one statement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...base import SnapshotDelta, StoredBody
from .._batch_write import BaseLog, BatchWrite, RunTip, base_entries_at, unregistered_run
from .._snapshot_rows import decode_ranges
from .._snapshot_sum import snapshot_checksum
from ._connect import PostgresConnector
from ._reads import SNAPSHOT_COLUMNS, owned_entries

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

__all__ = ('write_batch',)


async def write_batch(
    cur: AsyncCursor[TupleRow],
    db: PostgresConnector,
    deltas: Sequence[SnapshotDelta],
    encoded: Sequence[Sequence[StoredBody]],
) -> list[bool]:
    """Store the deltas in the cursor's transaction; whether each was new.

    Raises:
        SnapshotChainError: A delta's run is not registered, or a delta does not follow its chain.
    """
    batch = BatchWrite()
    run_ids = sorted({delta.run_id for delta in deltas})
    # The row locks (taken in run id order, so two batches cannot deadlock) serialize saves
    # of a run: a concurrent save of the same delta waits here, then (the next statement
    # reading afresh) finds the index taken and appends nothing.
    await cur.execute(
        db.sql('SELECT run_id FROM {runs} WHERE run_id = ANY(%s::text[]) ORDER BY run_id FOR UPDATE'), (run_ids,)
    )
    await cur.execute(
        db.sql(
            'SELECT r.run_id, r.conversation_id,'
            ' (SELECT COALESCE(MAX(idx) + 1, 0) FROM {snapshots} AS s WHERE s.run_id = r.run_id),'
            ' (SELECT ranges FROM {snapshots} AS s WHERE s.run_id = r.run_id ORDER BY idx DESC LIMIT 1),'
            # The log's next number follows its last entry: a row of its own, or a reference range's end.
            ' GREATEST((SELECT COALESCE(MAX(seq) + 1, 0) FROM {messages} AS m WHERE m.run_id = r.run_id),'
            ' (SELECT COALESCE(MAX(f.seq + f.count), 0) FROM {message_refs} AS f WHERE f.run_id = r.run_id))'
            ' FROM {runs} AS r WHERE r.run_id = ANY(%s::text[])'
        ),
        (run_ids,),
    )
    tips = {row[0]: RunTip(*row) for row in await cur.fetchall()}
    for delta, found in zip(deltas, encoded, strict=True):
        tip = tips.get(delta.run_id)
        if tip is None:
            raise unregistered_run(delta.run_id)
        base = None
        if delta.base_run_id is not None and delta.index == tip.next_index == 0:
            await _insert(cur, db, batch)  # the base may be a run this batch has just written
            base = await _base_log(cur, db, delta.base_run_id, delta.base_index, tip.conversation_id)
        batch.add(tip, delta, found, base)
    await _insert(cur, db, batch, batch.pending)
    return batch.results


async def _insert(
    cur: AsyncCursor[TupleRow],
    db: PostgresConnector,
    batch: BatchWrite,
    pending: Mapping[str, tuple[str, int]] | None = None,
) -> None:
    """Insert the rows the batch queued (and the runs' pending marks), in one statement."""
    rows, refs, snapshots = batch.take()
    if not rows and not refs and not snapshots and not pending:
        return
    marks = sorted((pending or {}).items())
    await cur.execute(
        db.sql(
            'WITH appended AS ('
            ' INSERT INTO {messages} (run_id, seq, body, data)'
            ' SELECT * FROM unnest(%(m_run)s::text[], %(m_seq)s::int[], %(m_body)s::text[], %(m_data)s::bytea[])),'
            ' refs AS (INSERT INTO {message_refs} (run_id, seq, count, ref_run_id, ref_seq)'
            ' SELECT * FROM unnest(%(r_run)s::text[], %(r_seq)s::int[], %(r_count)s::int[], %(r_ref_run)s::text[],'
            ' %(r_ref_seq)s::int[])),'
            ' pending AS (INSERT INTO {pending} (conversation_id, run_id, upto)'
            ' SELECT * FROM unnest(%(p_conversation)s::text[], %(p_run)s::text[], %(p_upto)s::int[])'
            ' ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = EXCLUDED.upto)'
            f' INSERT INTO {{snapshots}} (run_id, {SNAPSHOT_COLUMNS})'
            ' SELECT * FROM unnest(%(s_run)s::text[], %(s_index)s::int[], %(s_step)s::int[], %(s_state)s::text[],'
            ' %(s_at)s::timestamptz[], %(s_ranges)s::text[], %(s_size)s::int[], %(s_sum)s::text[])'
        ),
        {
            'm_run': [row.run_id for row in rows],
            'm_seq': [row.seq for row in rows],
            'm_body': [row.body if isinstance(row.body, str) else None for row in rows],
            'm_data': [row.body if isinstance(row.body, bytes) else None for row in rows],
            'r_run': [ref.run_id for ref in refs],
            'r_seq': [ref.seq for ref in refs],
            'r_count': [ref.count for ref in refs],
            'r_ref_run': [ref.ref_run_id for ref in refs],
            'r_ref_seq': [ref.ref_seq for ref in refs],
            'p_conversation': [conversation_id for _, (conversation_id, _) in marks],
            'p_run': [run_id for run_id, _ in marks],
            'p_upto': [upto for _, (_, upto) in marks],
            's_run': [s.run_id for s in snapshots],
            's_index': [s.index for s in snapshots],
            's_step': [s.step_index for s in snapshots],
            's_state': [s.state for s in snapshots],
            's_at': [s.saved_at for s in snapshots],
            's_ranges': [s.ranges for s in snapshots],
            's_size': [s.size for s in snapshots],
            's_sum': [snapshot_checksum(s.run_id, s.index, s.state, s.ranges, s.size) for s in snapshots],
        },
    )


async def _base_log(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, run_id: str, index: int | None, conversation_id: str | None
) -> BaseLog | None:
    """The snapshot a first delta builds on, or `None` if the store holds none."""
    if index is None:
        return None
    # Hold the base run's row so that deleting its conversation cannot pull the log from under the read.
    await cur.execute(
        db.sql(
            'SELECT r.conversation_id, s.ranges FROM {runs} AS r'
            ' JOIN {snapshots} AS s ON s.run_id = r.run_id AND s.idx = %s WHERE r.run_id = %s FOR SHARE OF r'
        ),
        (index, run_id),
    )
    found = await cur.fetchone()
    if found is None:
        return None
    shared = found[0] == conversation_id
    ranges = decode_ranges(run_id, index, found[1])
    # Shared: where each entry's body lives, to refer to it; otherwise the bodies, to copy them.
    entries = await owned_entries(cur, db, run_id, ranges, bodies=not shared)
    return BaseLog(shared, base_entries_at(run_id, index, ranges, entries))
