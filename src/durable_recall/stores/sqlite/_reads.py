"""The SQLite store's reads: runs, snapshot rows and message-log entries, as rows to decode.

Each function runs its statements on a connection the caller holds (in a worker thread, inside a
`BEGIN` when several statements must see one snapshot of the file); decoding, which is CPU work,
is left to the caller, after the connection is released.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ...base import StoredBody
from .._chain import LogRange
from .._snapshot_rows import SnapshotRow, log_span
from ._connection import transaction
from ._params import chunked, marks

__all__ = (
    'RUN_COLUMNS',
    'SELECT_LOG',
    'SNAPSHOT_COLUMNS',
    'latest_snapshot_row',
    'log_entries',
    'log_numbers',
    'log_span_entries',
    'run_rows',
    'runs_listed',
    'snapshot_rows',
)

RUN_COLUMNS = 'run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token'
SNAPSHOT_COLUMNS = 'idx, step_index, state, saved_at, ranges, size'

SELECT_LOG = (
    'SELECT m.seq, COALESCE(m.body, t.body) FROM dr_messages AS m'
    ' LEFT JOIN dr_messages AS t ON t.run_id = m.ref_run_id AND t.seq = m.ref_seq'
)
"""Log entries with references followed (one hop: a reference always names a row with a body)."""


def run_rows(conn: sqlite3.Connection, run_ids: Sequence[str]) -> list[Any]:
    """The runs rows of these run ids (ids never registered are left out), in one snapshot."""
    rows: list[Any] = []
    with transaction(conn, 'BEGIN'):
        for chunk in chunked(sorted(set(run_ids))):
            rows += conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs WHERE run_id IN ({marks(chunk)})', chunk)
    return rows


def runs_listed(conn: sqlite3.Connection, conversation_id: str | None, parent_run_id: str | None) -> list[Any]:
    """The runs rows of a conversation and/or a parent run (every run when neither), oldest first."""
    conditions: list[str] = []
    params: list[str] = []
    if conversation_id is not None:
        conditions.append('conversation_id = ?')
        params.append(conversation_id)
    if parent_run_id is not None:
        conditions.append('parent_run_id = ?')
        params.append(parent_run_id)
    where = f' WHERE {" AND ".join(conditions)}' if conditions else ''
    return conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs{where} ORDER BY started_at, run_id', params).fetchall()


def snapshot_rows(
    conn: sqlite3.Connection, run_id: str, *, include_interrupted: bool, after: int
) -> tuple[list[SnapshotRow], dict[int, StoredBody | None]]:
    """A run's snapshot rows after index `after` that a listing shows, and the log entries they span."""
    with transaction(conn, 'BEGIN'):
        query = f'SELECT {SNAPSHOT_COLUMNS} FROM dr_snapshots WHERE run_id = ? AND idx > ? ORDER BY idx'
        rows = [SnapshotRow(run_id, *row) for row in conn.execute(query, (run_id, after))]
        rows = [row for row in rows if row.is_shown(include_interrupted)]
        if not rows:
            return [], {}
        first, end = log_span(rows)
        return rows, log_span_entries(conn, run_id, first, end)


def latest_snapshot_row(conn: sqlite3.Connection, run_id: str, *, include_interrupted: bool) -> SnapshotRow | None:
    """A run's last snapshot row (the last complete one unless `include_interrupted`)."""
    # A row of unknown state is not filtered out: it is returned, and raises when decoded.
    condition = '' if include_interrupted else " AND state <> 'interrupted'"
    query = f'SELECT {SNAPSHOT_COLUMNS} FROM dr_snapshots WHERE run_id = ?{condition} ORDER BY idx DESC LIMIT 1'
    found = conn.execute(query, (run_id,)).fetchone()
    return None if found is None else SnapshotRow(run_id, *found)


def log_numbers(conn: sqlite3.Connection, run_id: str, seqs: Sequence[int]) -> dict[int, StoredBody | None]:
    """The run's log entries with these numbers, sorted and without repeats (call inside a transaction)."""
    log: dict[int, StoredBody | None] = {}
    for chunk in chunked(seqs):
        query = f'{SELECT_LOG} WHERE m.run_id = ? AND m.seq IN ({marks(chunk)})'
        log.update(conn.execute(query, (run_id, *chunk)).fetchall())
    return log


def log_span_entries(conn: sqlite3.Connection, run_id: str, first: int, end: int) -> dict[int, StoredBody | None]:
    """The run's log entries numbered `first` up to `end` (`None`: a reference to a row that is gone)."""
    rows = conn.execute(f'{SELECT_LOG} WHERE m.run_id = ? AND m.seq >= ? AND m.seq < ?', (run_id, first, end))
    return dict(rows.fetchall())


def log_entries(conn: sqlite3.Connection, run_id: str, ranges: list[LogRange]) -> dict[int, StoredBody | None]:
    """The run's log entries that `ranges` name, by number."""
    log: dict[int, StoredBody | None] = {}
    for first, end in ranges:
        log.update(log_span_entries(conn, run_id, first, end))
    return log
