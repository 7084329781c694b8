"""The Postgres store's reads: query templates and turning what they return into rows to decode.

Decoding messages, which is CPU work, is left to the store, which runs it in a thread once the
connection is back in the pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, LiteralString

from ...base import RunRecord, StoredBody
from .._chain import LogRange
from .._log_refs import MAX_HOPS, BaseEntry, owners_of, resolved_logs, spans
from .._run_rows import run_record
from .._snapshot_rows import SnapshotRow
from ._connect import PostgresConnector

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

__all__ = (
    'LIST_RUNS',
    'RUN_COLUMNS',
    'SNAPSHOT_COLUMNS',
    'log_entries',
    'log_owners',
    'logs',
    'owned_entries',
    'run_from_row',
    'snapshot_from_row',
)

RUN_COLUMNS: LiteralString = 'run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token'
SNAPSHOT_COLUMNS: LiteralString = 'idx, step_index, state, saved_at, ranges, size, checksum'

LIST_RUNS: dict[tuple[bool, bool], LiteralString] = {
    (False, False): f'SELECT {RUN_COLUMNS} FROM {{runs}} ORDER BY started_at, run_id',
    (True, False): f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE conversation_id = %s ORDER BY started_at, run_id',
    (False, True): f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE parent_run_id = %s ORDER BY started_at, run_id',
    (True, True): f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE conversation_id = %s AND parent_run_id = %s'
    ' ORDER BY started_at, run_id',
}
"""Listing runs, by whether a conversation id and a parent run id are given."""

_WANT: LiteralString = (
    'WITH RECURSIVE want (origin, run_id, first, stop, shift, hops) AS ('
    ' SELECT w.origin COLLATE "C", w.origin COLLATE "C", w.first, w.stop, 0, 0'
    ' FROM unnest(%(runs)s::text[], %(firsts)s::bigint[], %(stops)s::bigint[]) AS w (origin, first, stop)'
    ' UNION ALL SELECT w.origin, f.ref_run_id, GREATEST(w.first, f.seq) - f.seq + f.ref_seq,'
    ' LEAST(w.stop, f.seq + f.count) - f.seq + f.ref_seq, w.shift + f.seq - f.ref_seq, w.hops + 1'
    ' FROM want AS w CROSS JOIN LATERAL (SELECT * FROM {message_refs} AS f'
    ' WHERE f.run_id = w.run_id AND f.seq < w.stop AND f.seq + f.count > w.first OFFSET 0) AS f'
    ' WHERE w.hops < %(hops)s)'
)
"""The recursive `want (origin, run_id, first, stop, shift, hops)` of the `(run, first, end)` ranges bound.

A row asks for entries `first` up to `stop` of `run_id`, on behalf of entries `first + shift` up
to `stop + shift` of run `origin`: the ranges asked for, then the stretches of other runs' logs
that their references name, `hops` references away (at most `MAX_HOPS`, bound as `hops`).

Both tables are read through `LATERAL (... OFFSET 0)`, which the planner cannot flatten into a
join: each stretch is one index lookup on `(run_id, seq)` whatever the table statistics say. With
statistics not yet gathered (a table just filled), a plain join was planned as a hash join over a
scan of the whole message table.
"""

_JOIN_BODIES: LiteralString = (
    ' FROM want AS w CROSS JOIN LATERAL (SELECT * FROM {messages} AS m'
    ' WHERE m.run_id = w.run_id AND m.seq >= w.first AND m.seq < w.stop OFFSET 0) AS m'
)

_LOGS: LiteralString = (
    _WANT + ' SELECT w.origin, m.seq + w.shift, NULL::int, m.body, m.data' + _JOIN_BODIES + ' UNION ALL'
    ' SELECT origin, first + shift, stop + shift, NULL, NULL FROM want WHERE hops = 1'
)
"""The bodies of the entries asked for (text, or compressed bytes), and which of them references cover."""

_OWNERS: LiteralString = _WANT + ' SELECT w.run_id, w.first, w.stop, w.shift, w.hops FROM want AS w'
"""Every stretch the entries asked for lead to, references followed (see `owners_of`)."""

_OWNED: dict[bool, LiteralString] = {
    True: _WANT + ' SELECT m.seq + w.shift, w.run_id, m.seq, w.hops, m.body, m.data' + _JOIN_BODIES,
    False: _WANT + ' SELECT m.seq + w.shift, w.run_id, m.seq, w.hops, NULL::text, NULL::bytea' + _JOIN_BODIES,
}
"""Where the bodies of the entries asked for live, with the bodies or without."""


def run_from_row(row: TupleRow) -> RunRecord:
    """A runs row (`RUN_COLUMNS`) as a record."""
    run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token = row
    return run_record(run_id, conversation_id, parent_run_id, agent_name, metadata, started_at.astimezone(UTC), token)


def snapshot_from_row(run_id: str, row: TupleRow) -> SnapshotRow:
    """A snapshots row (`SNAPSHOT_COLUMNS`) of the run, to decode."""
    index, step_index, state, saved_at, ranges, size, checksum = row
    return SnapshotRow(run_id, index, step_index, state, saved_at.astimezone(UTC), ranges, size, checksum)


def _stored(text: str | None, data: bytes | None) -> StoredBody | None:
    """A stored body: the text if there is one, else the compressed bytes; `None` with neither."""
    return text if text is not None else None if data is None else bytes(data)


def _params(ranges: Iterable[tuple[str, int, int]]) -> dict[str, int | list[str] | list[int]]:
    """The parameters of `_WANT` for `(run_id, first, end)` ranges."""
    wanted = list(ranges)
    return {
        'runs': [run_id for run_id, _, _ in wanted],
        'firsts': [first for _, first, _ in wanted],
        'stops': [end for _, _, end in wanted],
        'hops': MAX_HOPS,
    }


async def logs(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, wanted: Iterable[tuple[str, int, int]]
) -> dict[str, dict[int, StoredBody | None]]:
    """Log entries by run and number, for `(run_id, first, end)` ranges, references followed, in one round trip.

    `None` for an entry a reference covers whose body is gone, or one missing below a later entry
    found (see `resolved_logs`); entries past a log are left out.
    """
    ranges = list(wanted)
    await cur.execute(db.sql(_LOGS), _params(ranges))
    rows = await cur.fetchall()
    return resolved_logs([(run_id, seq, end, _stored(text, data)) for run_id, seq, end, text, data in rows], ranges)


async def log_entries(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, run_id: str, ranges: list[LogRange]
) -> dict[int, StoredBody | None]:
    """The run's log entries that `ranges` name, by number, in one round trip."""
    return (await logs(cur, db, [(run_id, first, end) for first, end in ranges])).get(run_id, {})


async def owned_entries(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, run_id: str, ranges: Iterable[LogRange], *, bodies: bool
) -> dict[int, BaseEntry]:
    """The run's entries that `ranges` name, each with the run and row holding its body (and the body if asked).

    What a save building on a snapshot of the run needs (`BaseEntry`); an entry whose body is
    gone is left out.
    """
    await cur.execute(db.sql(_OWNED[bodies]), _params((run_id, first, end) for first, end in ranges))
    return {
        seq: BaseEntry(seq, owner, at, hops, _stored(text, data))
        for seq, owner, at, hops, text, data in await cur.fetchall()
        if not bodies or text is not None or data is not None
    }


async def log_owners(
    cur: AsyncCursor[TupleRow], db: PostgresConnector, run_id: str, seqs: Sequence[int]
) -> dict[int, tuple[str, int]]:
    """Where the run's entries `seqs` keep their bodies, `(run_id, seq)`, references followed (see `owners_of`)."""
    await cur.execute(db.sql(_OWNERS), _params((run_id, first, end) for first, end in spans(seqs)))
    found = await cur.fetchall()
    return owners_of(
        [(str(run), int(first), int(stop), int(shift), int(hops)) for run, first, stop, shift, hops in found], seqs
    )
