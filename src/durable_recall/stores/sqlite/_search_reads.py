"""A search's read of the runs it shows on SQLite: their index rows with their records, in one point read.

A search used to look the rows up, then the records (two reads, each a hop to a worker thread
when the connection is busy). In one read transaction both come from one snapshot of the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ...base import RunRecord
from ...index import IndexedRunRow
from .._run_rows import indexed_run, run_record
from ._connection import transaction
from ._params import chunked, marks
from ._reads import RUN_COLUMNS

__all__ = ('decode_rows_with_records', 'rows_with_records')

_INDEXED = 'run_key, run_id, scope_key, seen, first, lengths, seqs, roles, times, state, started_at'

Read = tuple[list[Any], list[Any]]
"""Index rows and runs rows, as read."""


def rows_with_records(conn: sqlite3.Connection, run_keys: Sequence[int]) -> Read:
    """The index rows of these keys and the runs rows of their runs (a run deleted meanwhile has none)."""
    indexed: list[Any] = []
    runs: list[Any] = []
    with transaction(conn, 'BEGIN'):
        for chunk in chunked(run_keys):
            indexed += conn.execute(f'SELECT {_INDEXED} FROM dr_index_runs WHERE run_key IN ({marks(chunk)})', chunk)
        for chunk in chunked(sorted({row[1] for row in indexed})):
            runs += conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs WHERE run_id IN ({marks(chunk)})', chunk)
    return indexed, runs


def decode_rows_with_records(read: Read) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]]:
    """The rows read, decoded (`CorruptRunError` for a runs row that does not decode)."""
    indexed, runs = read
    rows = {row[0]: indexed_run(*row) for row in indexed}
    records = {record.run_id: record for record in (run_record(*row) for row in runs)}
    return rows, records
