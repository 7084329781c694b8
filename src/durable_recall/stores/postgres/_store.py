"""The shared store: PostgreSQL, for many workers on many hosts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, LiteralString

import anyio.to_thread
from pydantic_ai.messages import ModelMessage

from ...base import RunIdConflictError, RunRecord, RunRegistration, Snapshot, SnapshotDelta, StoredBody
from .._chain import LogRange, snapshot_seqs
from .._rows import (
    BaseEntry,
    BaseLog,
    BatchWrite,
    RunTip,
    SnapshotRow,
    base_entries_at,
    decode_log,
    decode_ranges,
    decode_snapshot,
    decode_snapshots,
    encode_deltas,
    encode_metadata,
    log_span,
    run_record,
    unregistered_run,
)
from ._connect import AsyncConnectionPoolLike, PostgresConnector
from ._index import PostgresIndex, forget_conversation, lock_conversation

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

__all__ = ('AsyncConnectionPoolLike', 'PostgresStepStore')

_RUN_COLUMNS: LiteralString = 'run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token'
_SNAPSHOT_COLUMNS: LiteralString = 'idx, step_index, state, saved_at, ranges, size'
_LIST_RUNS: dict[tuple[bool, bool], LiteralString] = {
    (False, False): f'SELECT {_RUN_COLUMNS} FROM {{runs}} ORDER BY started_at, run_id',
    (True, False): f'SELECT {_RUN_COLUMNS} FROM {{runs}} WHERE conversation_id = %s ORDER BY started_at, run_id',
    (False, True): f'SELECT {_RUN_COLUMNS} FROM {{runs}} WHERE parent_run_id = %s ORDER BY started_at, run_id',
    (True, True): f'SELECT {_RUN_COLUMNS} FROM {{runs}} WHERE conversation_id = %s AND parent_run_id = %s'
    ' ORDER BY started_at, run_id',
}


class PostgresStepStore:
    """Keeps runs and snapshots in PostgreSQL tables, shared by every worker that points at them.

    Construction is cheap and needs no event loop: the pool is opened, and the tables created
    or migrated, on first use, inside the loop that uses the store. Concurrent saves of the
    same delta serialize on the run's row (`SELECT ... FOR UPDATE`), so exactly one appends.

    An owned pool belongs to the event loop that opened it; use one store per event loop.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: AsyncConnectionPoolLike | None = None,
        schema: str | None = None,
        connect_timeout: float = 5.0,
        max_size: int = 10,
    ) -> None:
        """Describe the database; nothing connects until the store is first used.

        Args:
            url: A `postgresql://` (or `postgres://`) URL; the store opens and closes its own pool.
            pool: A caller-owned psycopg async pool, used instead of `url` and never closed here.
            schema: Keep the tables in this schema (created if missing) instead of the search path.
            connect_timeout: Seconds to wait for the server before raising
                [`StoreUnavailableError`][durable_recall.StoreUnavailableError].
            max_size: The most connections the store's own pool opens.

        Raises:
            StoreConfigurationError: Neither or both of `url` and `pool`, a malformed URL, or an
                unusable schema name.
            ImportError: psycopg is not installed.
        """
        self._db = PostgresConnector(url, pool, schema=schema, connect_timeout=connect_timeout, max_size=max_size)
        self._sql = self._db.sql
        self._transaction = self._db.transaction
        self._index = PostgresIndex(self._db)

    def __repr__(self) -> str:
        return f'PostgresStepStore({self._db.describe()})'

    async def register_run(self, registration: RunRegistration) -> RunRecord:
        record = registration.record(datetime.now(UTC))
        async with self._transaction() as cur:
            # A run deleted with its conversation between the two statements is inserted afresh.
            while True:
                await cur.execute(
                    self._sql(
                        f'INSERT INTO {{runs}} ({_RUN_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)'
                        ' ON CONFLICT (run_id) DO NOTHING'
                    ),
                    (
                        record.run_id,
                        record.conversation_id,
                        record.parent_run_id,
                        record.agent_name,
                        encode_metadata(record.metadata),
                        record.started_at,
                        record.token,
                    ),
                )
                if cur.rowcount == 1:
                    return record
                await cur.execute(self._sql(f'SELECT {_RUN_COLUMNS} FROM {{runs}} WHERE run_id = %s'), (record.run_id,))
                existing = await cur.fetchone()
                if existing is not None:
                    break
        stored = self._run(existing)
        if stored.token != registration.token:
            raise RunIdConflictError(registration.run_id)
        return stored

    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._transaction() as cur:
            await cur.execute(self._sql(f'SELECT {_RUN_COLUMNS} FROM {{runs}} WHERE run_id = %s'), (run_id,))
            row = await cur.fetchone()
        return None if row is None else self._run(row)

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        if not run_ids:
            return {}
        async with self._transaction() as cur:
            await cur.execute(
                self._sql(f'SELECT {_RUN_COLUMNS} FROM {{runs}} WHERE run_id = ANY(%s::text[])'),
                (sorted(set(run_ids)),),
            )
            rows = await cur.fetchall()
        return {record.run_id: record for record in map(self._run, rows)}

    async def list_runs(
        self, *, conversation_id: str | None = None, parent_run_id: str | None = None
    ) -> list[RunRecord]:
        query = _LIST_RUNS[conversation_id is not None, parent_run_id is not None]
        params = [value for value in (conversation_id, parent_run_id) if value is not None]
        async with self._transaction() as cur:
            await cur.execute(self._sql(query), params)
            rows = await cur.fetchall()
        return [self._run(row) for row in rows]

    async def list_conversations(self) -> list[str]:
        async with self._transaction() as cur:
            await cur.execute(
                self._sql(
                    'SELECT DISTINCT conversation_id FROM {runs}'
                    " WHERE conversation_id IS NOT NULL AND conversation_id <> '' ORDER BY conversation_id"
                )
            )
            return [row[0] for row in await cur.fetchall()]

    async def save_snapshot(self, delta: SnapshotDelta) -> bool:
        return (await self._save([delta]))[0]

    async def save_snapshots(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        return await self._save(deltas)

    async def _save(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        if not deltas:
            return []
        size = sum(len(body) for delta in deltas for body in delta.messages)
        # Compression is CPU work: a big batch goes to a thread rather than stalling the event loop.
        if size < _INLINE_ENCODE:
            encoded = encode_deltas(deltas)
        else:
            encoded = await anyio.to_thread.run_sync(encode_deltas, deltas)
        batch = BatchWrite()
        run_ids = sorted({delta.run_id for delta in deltas})
        async with self._transaction() as cur:
            # The row locks (taken in run id order, so two batches cannot deadlock) serialize saves
            # of a run: a concurrent save of the same delta waits here, then (the next statement
            # reading afresh) finds the index taken and appends nothing.
            await cur.execute(
                self._sql('SELECT run_id FROM {runs} WHERE run_id = ANY(%s::text[]) ORDER BY run_id FOR UPDATE'),
                (run_ids,),
            )
            await cur.execute(
                self._sql(
                    'SELECT r.run_id, r.conversation_id,'
                    ' (SELECT COALESCE(MAX(idx) + 1, 0) FROM {snapshots} AS s WHERE s.run_id = r.run_id),'
                    ' (SELECT ranges FROM {snapshots} AS s WHERE s.run_id = r.run_id ORDER BY idx DESC LIMIT 1),'
                    ' (SELECT COALESCE(MAX(seq) + 1, 0) FROM {messages} AS m WHERE m.run_id = r.run_id)'
                    ' FROM {runs} AS r WHERE r.run_id = ANY(%s::text[])'
                ),
                (run_ids,),
            )
            tips = {row[0]: RunTip(*row) for row in await cur.fetchall()}
            for delta, bodies in zip(deltas, encoded, strict=True):
                tip = tips.get(delta.run_id)
                if tip is None:
                    raise unregistered_run(delta.run_id)
                base = None
                if delta.base_run_id is not None and delta.index == tip.next_index == 0:
                    await self._insert(cur, batch)  # the base may be a run this batch has just written
                    base = await self._base_log(cur, delta.base_run_id, delta.base_index, tip.conversation_id)
                batch.add(tip, delta, bodies, base)
            await self._insert(cur, batch, batch.pending)
        return batch.results

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        async with self._transaction(snapshot=True) as cur:
            await cur.execute(
                self._sql(f'SELECT {_SNAPSHOT_COLUMNS} FROM {{snapshots}} WHERE run_id = %s AND idx > %s ORDER BY idx'),
                (run_id, after),
            )
            rows = [self._snapshot_row(run_id, row) for row in await cur.fetchall()]
            rows = [row for row in rows if row.is_shown(include_interrupted)]
            if not rows:
                return []
            first, end = log_span(rows)
            await cur.execute(
                self._sql(_SELECT_LOG + ' WHERE m.run_id = %s AND m.seq >= %s AND m.seq < %s'), (run_id, first, end)
            )
            log = _bodies(await cur.fetchall())
        return await anyio.to_thread.run_sync(lambda: decode_snapshots(rows, log))

    async def latest_snapshot(self, run_id: str, *, include_interrupted: bool = False) -> Snapshot | None:
        # A row of unknown state is not filtered out: it is returned, and raises when decoded.
        query: LiteralString = (
            f'SELECT {_SNAPSHOT_COLUMNS} FROM {{snapshots}} WHERE run_id = %s ORDER BY idx DESC LIMIT 1'
            if include_interrupted
            else f'SELECT {_SNAPSHOT_COLUMNS} FROM {{snapshots}} WHERE run_id = %s'
            " AND state <> 'interrupted' ORDER BY idx DESC LIMIT 1"
        )
        async with self._transaction(snapshot=True) as cur:
            await cur.execute(self._sql(query), (run_id,))
            found = await cur.fetchone()
            if found is None:
                return None
            row = self._snapshot_row(run_id, found)
            log = await self._log_entries(cur, run_id, decode_ranges(run_id, row.index, row.ranges))
        return await anyio.to_thread.run_sync(decode_snapshot, row, log)

    async def delete_conversation(self, conversation_id: str) -> int:
        async with self._transaction() as cur:
            # The index lock first, so that no catch-up of the conversation interleaves (see
            # `_postgres_index`); then runs: deleting a run's row waits for any save holding it,
            # and each later statement reads afresh, so that save's messages are deleted too.
            await lock_conversation(cur, self._db, conversation_id)
            await cur.execute(
                self._sql('DELETE FROM {runs} WHERE conversation_id = %s RETURNING run_id'), (conversation_id,)
            )
            run_ids = [row[0] for row in await cur.fetchall()]
            if run_ids:
                await cur.execute(self._sql('DELETE FROM {messages} WHERE run_id = ANY(%s)'), (run_ids,))
                await cur.execute(self._sql('DELETE FROM {snapshots} WHERE run_id = ANY(%s)'), (run_ids,))
            await forget_conversation(cur, self._db, conversation_id, run_ids)
            return len(run_ids)

    async def read_messages(self, run_id: str, seqs: Sequence[int]) -> dict[int, ModelMessage]:
        if not seqs:
            return {}
        async with self._transaction() as cur:
            await cur.execute(
                self._sql(_SELECT_LOG + ' WHERE m.run_id = %s AND m.seq = ANY(%s::bigint[])'),
                (run_id, sorted(set(seqs))),
            )
            log = _bodies(await cur.fetchall())
        return await anyio.to_thread.run_sync(decode_log, run_id, log)

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        asked = {run_id: sorted(set(seqs)) for run_id, seqs in wanted.items() if seqs}
        if not asked:
            return {}
        logs: dict[str, dict[int, StoredBody | None]] = {}
        async with self._transaction() as cur:
            await cur.execute(
                self._sql(
                    'SELECT m.run_id, m.seq, COALESCE(m.body, t.body), COALESCE(m.data, t.data) FROM {messages} AS m'
                    ' JOIN unnest(%s::text[], %s::bigint[]) AS w (run_id, seq) ON m.run_id = w.run_id AND m.seq = w.seq'
                    ' LEFT JOIN {messages} AS t ON t.run_id = m.ref_run_id AND t.seq = m.ref_seq'
                ),
                (
                    [run_id for run_id, seqs in asked.items() for _ in seqs],
                    [seq for seqs in asked.values() for seq in seqs],
                ),
            )
            for run_id, seq, text, data in await cur.fetchall():
                logs.setdefault(run_id, {}).update(_bodies([(seq, text, data)]))

        def decode() -> dict[str, dict[int, ModelMessage]]:
            return {run_id: decode_log(run_id, log) for run_id, log in logs.items()}

        return await anyio.to_thread.run_sync(decode)

    def index_storage(self) -> PostgresIndex:
        return self._index

    async def aclose(self) -> None:
        """Close the store's own pool (a caller-owned pool stays open); later use opens a new one."""
        await self._db.aclose()

    async def _log_entries(
        self, cur: AsyncCursor[TupleRow], run_id: str, ranges: list[LogRange]
    ) -> dict[int, StoredBody | None]:
        """The run's log entries that `ranges` name, by number, in one round trip."""
        await cur.execute(
            self._sql(
                _SELECT_LOG + ' JOIN unnest(%s::int[], %s::int[]) AS r(first, stop)'
                ' ON m.seq >= r.first AND m.seq < r.stop WHERE m.run_id = %s'
            ),
            ([first for first, _ in ranges], [end for _, end in ranges], run_id),
        )
        return _bodies(await cur.fetchall())

    async def _insert(
        self, cur: AsyncCursor[TupleRow], batch: BatchWrite, pending: Mapping[str, tuple[str, int]] | None = None
    ) -> None:
        """Insert the rows the batch queued (and the runs' pending marks), in one statement."""
        rows, snapshots = batch.take()
        if not rows and not snapshots and not pending:
            return
        marks = sorted((pending or {}).items())
        await cur.execute(
            self._sql(
                'WITH appended AS ('
                ' INSERT INTO {messages} (run_id, seq, body, data, ref_run_id, ref_seq)'
                ' SELECT * FROM unnest(%(m_run)s::text[], %(m_seq)s::int[], %(m_body)s::text[], %(m_data)s::bytea[],'
                ' %(m_ref_run)s::text[], %(m_ref_seq)s::int[])),'
                ' pending AS (INSERT INTO {pending} (conversation_id, run_id, upto)'
                ' SELECT * FROM unnest(%(p_conversation)s::text[], %(p_run)s::text[], %(p_upto)s::int[])'
                ' ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = EXCLUDED.upto)'
                f' INSERT INTO {{snapshots}} (run_id, {_SNAPSHOT_COLUMNS})'
                ' SELECT * FROM unnest(%(s_run)s::text[], %(s_index)s::int[], %(s_step)s::int[], %(s_state)s::text[],'
                ' %(s_at)s::timestamptz[], %(s_ranges)s::text[], %(s_size)s::int[])'
            ),
            {
                'm_run': [row.run_id for row in rows],
                'm_seq': [row.seq for row in rows],
                'm_body': [row.body if isinstance(row.body, str) else None for row in rows],
                'm_data': [row.body if isinstance(row.body, bytes) else None for row in rows],
                'm_ref_run': [row.ref_run_id for row in rows],
                'm_ref_seq': [row.ref_seq for row in rows],
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
            },
        )

    async def _base_log(
        self, cur: AsyncCursor[TupleRow], run_id: str, index: int | None, conversation_id: str | None
    ) -> BaseLog | None:
        """The snapshot a first delta builds on, or `None` if the store holds none."""
        if index is None:
            return None
        # Hold the base run's row so that deleting its conversation cannot pull the log from under the read.
        await cur.execute(
            self._sql(
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
        seqs = snapshot_seqs(ranges)
        entries: dict[int, BaseEntry] = {}
        if shared:
            # Where each entry's body lives: the row itself, or the one its reference names.
            await cur.execute(
                self._sql(
                    'SELECT seq, COALESCE(ref_run_id, run_id), COALESCE(ref_seq, seq) FROM {messages}'
                    ' WHERE run_id = %s AND seq = ANY(%s::int[])'
                ),
                (run_id, seqs),
            )
            entries.update((seq, BaseEntry(owner, at)) for seq, owner, at in await cur.fetchall())
        else:
            query = self._sql(_SELECT_LOG + ' WHERE m.run_id = %s AND m.seq = ANY(%s::int[])')
            await cur.execute(query, (run_id, seqs))
            found = _bodies(await cur.fetchall())
            entries.update((seq, BaseEntry(run_id, seq, body)) for seq, body in found.items() if body is not None)
        return BaseLog(shared, base_entries_at(run_id, index, ranges, entries))

    @staticmethod
    def _run(row: TupleRow) -> RunRecord:
        run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token = row
        return run_record(
            run_id, conversation_id, parent_run_id, agent_name, metadata, started_at.astimezone(UTC), token
        )

    @staticmethod
    def _snapshot_row(run_id: str, row: TupleRow) -> SnapshotRow:
        index, step_index, state, saved_at, ranges, size = row
        return SnapshotRow(run_id, index, step_index, state, saved_at.astimezone(UTC), ranges, size)


_INLINE_ENCODE = 64 * 1024
"""Batches with fewer bytes of new messages are compressed on the event loop (a thread hop costs more)."""

_SELECT_LOG: LiteralString = (
    'SELECT m.seq, COALESCE(m.body, t.body), COALESCE(m.data, t.data) FROM {messages} AS m'
    ' LEFT JOIN {messages} AS t ON t.run_id = m.ref_run_id AND t.seq = m.ref_seq'
)
"""Log entries with references followed (one hop: a reference always names a row with a body)."""


def _bodies(rows: Iterable[TupleRow]) -> dict[int, StoredBody | None]:
    """Stored bodies by log number: the text if there is one, else the compressed bytes.

    `None` for an entry with neither (a reference to a row that is gone), which a reader reports.
    """
    log: dict[int, StoredBody | None] = {}
    for seq, text, data in rows:
        log[seq] = text if text is not None else None if data is None else bytes(data)
    return log
