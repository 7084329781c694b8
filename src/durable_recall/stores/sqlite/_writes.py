"""The SQLite store's writes: registering runs and saving batches of snapshots (deletes: `_erase`).

Each is one `BEGIN IMMEDIATE` transaction on a connection the caller holds in a worker thread, so
writers of several processes queue on SQLite's lock instead of interleaving. What a batch of
deltas inserts is planned by `BatchWrite`; this module reads each run's tip and each base, and
runs the inserts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

from ...base import RunRecord, RunRegistration, SnapshotDelta, StoredBody, to_micros
from .._batch_write import BaseLog, BatchWrite, RunTip, StoredSnapshot, base_entries_at, unregistered_run
from .._run_rows import encode_metadata, run_record
from .._snapshot_rows import decode_ranges
from .._snapshot_sum import snapshot_checksum
from ._connection import transaction
from ._index import mark_pending
from ._reads import RUN_COLUMNS, SNAPSHOT_COLUMNS, owned_entries

__all__ = ('register_run', 'write_batch')

_RUN_NO = '(SELECT run_no FROM dr_runs WHERE run_id = ?)'
"""A run's number, by its id."""


def register_run(conn: sqlite3.Connection, registration: RunRegistration) -> RunRecord:
    """Insert the run, or return the stored record of the same agent run.

    Raises:
        RunIdConflictError: The run id is taken by another agent run.
    """
    with transaction(conn, 'BEGIN IMMEDIATE'):
        return _register(conn, registration)


def _register(conn: sqlite3.Connection, registration: RunRegistration) -> RunRecord:
    """`register_run` in the caller's write transaction."""
    row = conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs WHERE run_id = ?', (registration.run_id,))
    existing = row.fetchone()
    if existing is not None:
        record = run_record(*existing)
        if record.token != registration.token:
            from ...base import RunIdConflictError  # loads pydantic-ai (see base._errors)

            raise RunIdConflictError(registration.run_id)
        return record
    record = registration.record(datetime.now(UTC))
    conn.execute(
        f'INSERT INTO dr_runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)',
        (
            record.run_id,
            record.conversation_id,
            record.parent_run_id,
            record.agent_name,
            encode_metadata(record.metadata),
            to_micros(record.started_at),
            record.token,
        ),
    )
    return record


def write_batch(
    conn: sqlite3.Connection,
    deltas: Sequence[SnapshotDelta],
    encoded: Sequence[Sequence[StoredBody]],
    registration: RunRegistration | None = None,
) -> list[bool]:
    """Store the deltas in one write transaction: every new one, or (on any error) none.

    Args:
        conn: The connection, held by this thread.
        deltas: The deltas, in order.
        encoded: Each delta's new bodies, encoded (`encode_deltas`).
        registration: A run to register first, in the same transaction (`save_batch`): a run's
            first write then commits (and syncs the file) once, not twice.

    Raises:
        RunIdConflictError: The registration's run id is taken by another agent run.
        SnapshotChainError: A delta's run is not registered, or a delta does not follow its chain.
    """
    batch = BatchWrite()
    tips: dict[str, RunTip] = {}
    with transaction(conn, 'BEGIN IMMEDIATE'):
        if registration is not None:
            _register(conn, registration)
        for delta, bodies in zip(deltas, encoded, strict=True):
            tip = tips.get(delta.run_id)
            if tip is None:
                tip = tips[delta.run_id] = _tip(conn, delta.run_id)
            base = None
            if delta.base_run_id is not None and delta.index == tip.next_index == 0:
                _insert(conn, batch)  # the base may be a run this batch has just written
                base = _base_log(conn, delta.base_run_id, delta.base_index, tip.conversation_id)
            batch.add(tip, delta, bodies, base)
        _insert(conn, batch)
        for run_id, (conversation_id, upto) in batch.pending.items():
            mark_pending(conn, conversation_id, run_id, upto)
    return batch.results


def _tip(conn: sqlite3.Connection, run_id: str) -> RunTip:
    """The run's chain tip, read in the save's transaction.

    Raises:
        SnapshotChainError: The run is not registered.
    """
    # The log's next number follows its last entry: a row of its own, or the end of a reference range.
    found = conn.execute(
        'SELECT r.conversation_id,'
        ' (SELECT COALESCE(MAX(idx) + 1, 0) FROM dr_snapshots WHERE run_id = ?1),'
        ' (SELECT ranges FROM dr_snapshots WHERE run_id = ?1 ORDER BY idx DESC LIMIT 1),'
        ' max((SELECT COALESCE(MAX(m.seq) + 1, 0) FROM dr_messages AS m WHERE m.run_no = r.run_no),'
        ' COALESCE((SELECT f.seq + f.count FROM dr_message_refs AS f WHERE f.run_no = r.run_no'
        ' ORDER BY f.seq DESC LIMIT 1), 0))'
        ' FROM dr_runs AS r WHERE r.run_id = ?1',
        (run_id,),
    ).fetchone()
    if found is None:
        raise unregistered_run(run_id)
    return RunTip(run_id, *found)


def _insert(conn: sqlite3.Connection, batch: BatchWrite) -> None:
    rows, refs, snapshots = batch.take()
    # The log names runs by number (schema version 13), looked up by id here: every run a batch
    # writes to or refers to is registered (its tip, or the base it was read from).
    conn.executemany(
        f'INSERT INTO dr_messages (run_no, seq, body) VALUES ({_RUN_NO}, ?, ?)',
        [(row.run_id, row.seq, row.body) for row in rows],
    )
    conn.executemany(
        f'INSERT INTO dr_message_refs (run_no, seq, count, ref_run_no, ref_seq) VALUES ({_RUN_NO}, ?, ?, {_RUN_NO}, ?)',
        [(ref.run_id, ref.seq, ref.count, ref.ref_run_id, ref.ref_seq) for ref in refs],
    )
    conn.executemany(
        f'INSERT INTO dr_snapshots (run_id, {SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        [
            (s.run_id, s.index, s.step_index, s.state, to_micros(s.saved_at), s.ranges, s.size, _checksum(s))
            for s in snapshots
        ],
    )


def _checksum(s: StoredSnapshot) -> str:
    return snapshot_checksum(s.run_id, s.index, s.state, s.ranges, s.size)


def _base_log(conn: sqlite3.Connection, run_id: str, index: int | None, conversation_id: str | None) -> BaseLog | None:
    """The snapshot a first delta builds on, or `None` if the store holds none."""
    if index is None:
        return None
    found = conn.execute(
        'SELECT r.conversation_id, s.ranges FROM dr_runs AS r'
        ' JOIN dr_snapshots AS s ON s.run_id = r.run_id AND s.idx = ? WHERE r.run_id = ?',
        (index, run_id),
    ).fetchone()
    if found is None:
        return None
    shared = found[0] == conversation_id
    ranges = decode_ranges(run_id, index, found[1])
    # Shared: where each entry's body lives, to refer to it; otherwise the bodies, to copy them.
    entries = owned_entries(conn, run_id, ranges, bodies=not shared)
    return BaseLog(shared, base_entries_at(run_id, index, ranges, entries))
