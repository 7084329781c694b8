"""The Postgres store's reads: query templates and turning what they return into rows to decode.

Decoding messages, which is CPU work, is left to the store, which runs it in a thread once the
connection is back in the pool.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from typing import TYPE_CHECKING, LiteralString

from ...base import RunRecord, StoredBody
from .._chain import LogRange
from .._run_rows import run_record
from .._snapshot_rows import SnapshotRow
from ._connect import PostgresConnector

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

__all__ = (
    'LIST_RUNS',
    'RUN_COLUMNS',
    'SELECT_LOG',
    'SNAPSHOT_COLUMNS',
    'bodies',
    'log_entries',
    'run_from_row',
    'snapshot_from_row',
)

RUN_COLUMNS: LiteralString = 'run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token'
SNAPSHOT_COLUMNS: LiteralString = 'idx, step_index, state, saved_at, ranges, size'

LIST_RUNS: dict[tuple[bool, bool], LiteralString] = {
    (False, False): f'SELECT {RUN_COLUMNS} FROM {{runs}} ORDER BY started_at, run_id',
    (True, False): f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE conversation_id = %s ORDER BY started_at, run_id',
    (False, True): f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE parent_run_id = %s ORDER BY started_at, run_id',
    (True, True): f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE conversation_id = %s AND parent_run_id = %s'
    ' ORDER BY started_at, run_id',
}
"""Listing runs, by whether a conversation id and a parent run id are given."""

SELECT_LOG: LiteralString = (
    'SELECT m.seq, COALESCE(m.body, t.body), COALESCE(m.data, t.data) FROM {messages} AS m'
    ' LEFT JOIN {messages} AS t ON t.run_id = m.ref_run_id AND t.seq = m.ref_seq'
)
"""Log entries with references followed (one hop: a reference always names a row with a body)."""


def run_from_row(row: TupleRow) -> RunRecord:
    """A runs row (`RUN_COLUMNS`) as a record."""
    run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token = row
    return run_record(run_id, conversation_id, parent_run_id, agent_name, metadata, started_at.astimezone(UTC), token)


def snapshot_from_row(run_id: str, row: TupleRow) -> SnapshotRow:
    """A snapshots row (`SNAPSHOT_COLUMNS`) of the run, to decode."""
    index, step_index, state, saved_at, ranges, size = row
    return SnapshotRow(run_id, index, step_index, state, saved_at.astimezone(UTC), ranges, size)


def bodies(rows: Iterable[TupleRow]) -> dict[int, StoredBody | None]:
    """Stored bodies by log number: the text if there is one, else the compressed bytes.

    `None` for an entry with neither (a reference to a row that is gone), which a reader reports.
    """
    log: dict[int, StoredBody | None] = {}
    for seq, text, data in rows:
        log[seq] = text if text is not None else None if data is None else bytes(data)
    return log


async def log_entries(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, run_id: str, ranges: list[LogRange]
) -> dict[int, StoredBody | None]:
    """The run's log entries that `ranges` name, by number, in one round trip."""
    await cur.execute(
        db.sql(
            SELECT_LOG + ' JOIN unnest(%s::int[], %s::int[]) AS r(first, stop)'
            ' ON m.seq >= r.first AND m.seq < r.stop WHERE m.run_id = %s'
        ),
        ([first for first, _ in ranges], [end for _, end in ranges], run_id),
    )
    return bodies(await cur.fetchall())
