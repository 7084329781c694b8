"""The runs a search shows (or catch-up reads) on SQLite: index rows with their records, in one point read.

A search used to look the rows up, then the records (two reads, each a hop to a worker thread
when the connection is busy). In one read transaction both come from one snapshot of the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Literal

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


def rows_with_records(
    conn: sqlite3.Connection, keys: Sequence[int] | Sequence[str], *, by: Literal['run_key', 'run_id'] = 'run_key'
) -> Read:
    """The index rows of these run keys (or run ids) and the runs rows of their runs (a run deleted meanwhile has none).

    By run id (catch-up's first read), the runs rows are those of the ids asked, indexed or not.
    """
    indexed: list[Any] = []
    runs: list[Any] = []
    with transaction(conn, 'BEGIN'):
        for chunk in chunked(keys):
            indexed += conn.execute(f'SELECT {_INDEXED} FROM dr_index_runs WHERE {by} IN ({marks(chunk)})', chunk)
        run_ids = sorted({row[1] for row in indexed}) if by == 'run_key' else sorted({str(key) for key in keys})
        for chunk in chunked(run_ids):
            runs += conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs WHERE run_id IN ({marks(chunk)})', chunk)
    return indexed, runs


def decode_rows_with_records(read: Read) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]]:
    """The rows read, decoded (`CorruptRunError` for a runs row that does not decode)."""
    indexed, runs = read
    rows = {row[0]: indexed_run(*row) for row in indexed}
    records = {record.run_id: record for record in (run_record(*row) for row in runs)}
    return rows, records
