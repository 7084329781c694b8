"""The Postgres store's snapshot reads: a run's listing, several runs' listings, a run's latest snapshot.

Each reads snapshot rows and then the log entries they name, in one `REPEATABLE READ` transaction
(so that a deletion cannot pull the log from under the second statement). The transaction is
pipelined: `BEGIN`, the isolation level and the first statement travel in one round trip, which
matters to the index's catch-up, which lists the snapshots a write has just saved.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, LiteralString

import anyio.to_thread

from ...base import CorruptSnapshotError, Snapshot
from .._snapshot_rows import (
    ReadListing,
    SnapshotRow,
    check_consecutive,
    decode_ranges,
    decode_snapshot,
    decode_snapshots,
    log_span,
)
from ._connect import PostgresConnector
from ._reads import SNAPSHOT_COLUMNS, log_entries, logs, snapshot_from_row

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('latest_snapshot', 'list_snapshots', 'read_listings')

_LISTINGS: LiteralString = (
    'SELECT s.run_id, s.idx, s.step_index, s.state, s.saved_at, s.ranges, s.size, s.checksum FROM {snapshots} AS s'
    ' JOIN unnest(%s::text[], %s::bigint[]) AS w (wanted, seen) ON s.run_id = w.wanted AND s.idx > w.seen'
    ' ORDER BY s.run_id, s.idx'
)
"""Snapshot rows of several runs, each after its own watermark (`read_listings`)."""


async def list_snapshots(
    db: PostgresConnector,
    run_id: str,
    include_interrupted: bool,
    after: int,
    shared: MutableMapping[object, ModelMessage] | None,
) -> list[Snapshot]:
    """`StepStore.list_snapshots`, decoding through `shared` when given (`SharingReader`)."""
    async with db.transaction(snapshot=True, pipeline=True) as cur:
        await cur.execute(
            db.sql(f'SELECT {SNAPSHOT_COLUMNS} FROM {{snapshots}} WHERE run_id = %s AND idx > %s ORDER BY idx'),
            (run_id, after),
        )
        rows = [snapshot_from_row(run_id, row) for row in await cur.fetchall()]
        check_consecutive(run_id, rows, after)
        rows = [row for row in rows if row.is_shown(include_interrupted)]
        if not rows:
            return []
        log = (await logs(cur, db, [(run_id, *log_span(rows))])).get(run_id, {})
    return await anyio.to_thread.run_sync(lambda: decode_snapshots(rows, log, shared))


async def read_listings(db: PostgresConnector, after: Mapping[str, int]) -> dict[str, ReadListing]:
    """Several runs' listings in one transaction of two statements (see `SharingReader.read_listings`)."""
    runs = list(after)
    if not runs:
        return {}
    out: dict[str, ReadListing] = {}
    shown: dict[str, list[SnapshotRow]] = {}
    async with db.transaction(snapshot=True, pipeline=True) as cur:
        await cur.execute(db.sql(_LISTINGS), (runs, [after[run_id] for run_id in runs]))
        found: dict[str, list[SnapshotRow]] = {run_id: [] for run_id in runs}
        for run_id, *row in await cur.fetchall():
            found[run_id].append(snapshot_from_row(run_id, tuple(row)))
        for run_id, rows in found.items():
            try:
                check_consecutive(run_id, rows, after[run_id])
            except CorruptSnapshotError as error:
                out[run_id] = ReadListing((), {}, error)
                continue
            shown[run_id] = [row for row in rows if row.is_shown(True)]
        spans = [(run_id, *log_span(rows)) for run_id, rows in shown.items() if rows]
        log = await logs(cur, db, spans) if spans else {}
    for run_id, rows in shown.items():
        out[run_id] = ReadListing(rows, log.get(run_id, {}) if rows else {})
    return out


async def latest_snapshot(db: PostgresConnector, run_id: str, include_interrupted: bool) -> Snapshot | None:
    """`StepStore.latest_snapshot`."""
    # A row of unknown state is not filtered out: it is returned, and raises when decoded.
    query: LiteralString = (
        f'SELECT {SNAPSHOT_COLUMNS} FROM {{snapshots}} WHERE run_id = %s ORDER BY idx DESC LIMIT 1'
        if include_interrupted
        else f'SELECT {SNAPSHOT_COLUMNS} FROM {{snapshots}} WHERE run_id = %s'
        " AND state <> 'interrupted' ORDER BY idx DESC LIMIT 1"
    )
    async with db.transaction(snapshot=True, pipeline=True) as cur:
        await cur.execute(db.sql(query), (run_id,))
        found = await cur.fetchone()
        if found is None:
            return None
        row = snapshot_from_row(run_id, found)
        log = await log_entries(cur, db, run_id, decode_ranges(run_id, row.index, row.ranges))
    return await anyio.to_thread.run_sync(decode_snapshot, row, log)
