"""The shared store: PostgreSQL, for many workers on many hosts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, LiteralString

import anyio.to_thread
from pydantic_ai.messages import ModelMessage

from .._errors import RunIdConflictError
from .._records import RunRecord, RunRegistration, Snapshot, SnapshotDelta
from ._chain import LogRange, inline_base, resolve_delta
from ._postgres_connect import AsyncConnectionPoolLike, PostgresConnector
from ._postgres_index import PostgresIndex, forget_conversation, lock_conversation
from ._rows import (
    SnapshotRow,
    chain_gap,
    decode_log,
    decode_ranges,
    decode_snapshot,
    decode_snapshots,
    encode_metadata,
    encode_ranges,
    gather_bodies,
    log_span,
    run_record,
    unregistered_run,
)

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
        async with self._transaction() as cur:
            # The row lock serializes saves of one run: a concurrent save of the same delta waits
            # here, then (each statement reading afresh) finds the index taken and appends nothing.
            await cur.execute(
                self._sql('SELECT conversation_id FROM {runs} WHERE run_id = %s FOR UPDATE'), (delta.run_id,)
            )
            run = await cur.fetchone()
            if run is None:
                raise unregistered_run(delta.run_id)
            await cur.execute(
                self._sql(
                    'SELECT (SELECT COALESCE(MAX(idx) + 1, 0) FROM {snapshots} WHERE run_id = %(run)s),'
                    ' (SELECT ranges FROM {snapshots} WHERE run_id = %(run)s ORDER BY idx DESC LIMIT 1),'
                    ' (SELECT COALESCE(MAX(seq) + 1, 0) FROM {messages} WHERE run_id = %(run)s)'
                ),
                {'run': delta.run_id},
            )
            found = await cur.fetchone()
            assert found is not None, 'a SELECT without FROM returns one row'
            next_index, previous_text, next_seq = found
            if delta.index < next_index:
                return False
            if delta.index != next_index:
                raise chain_gap(delta, next_index)
            own = delta
            if delta.base_run_id is not None:
                own = inline_base(delta, await self._base_bodies(cur, delta.base_run_id, delta.base_index))
            previous = None if previous_text is None else decode_ranges(delta.run_id, next_index - 1, previous_text)
            resolved = resolve_delta(own, previous, next_seq)
            await cur.execute(
                self._sql(
                    'WITH appended AS ('
                    ' INSERT INTO {messages} (run_id, seq, body)'
                    ' SELECT %(run)s, %(first)s + ordinality - 1, body'
                    ' FROM unnest(%(bodies)s::text[]) WITH ORDINALITY AS new(body, ordinality)),'
                    ' pending AS (INSERT INTO {pending} (conversation_id, run_id, upto)'
                    ' VALUES (%(conversation)s, %(run)s, %(index)s)'
                    ' ON CONFLICT (conversation_id, run_id) DO UPDATE SET upto = EXCLUDED.upto)'
                    f' INSERT INTO {{snapshots}} (run_id, {_SNAPSHOT_COLUMNS})'
                    ' VALUES (%(run)s, %(index)s, %(step)s, %(state)s, %(now)s, %(ranges)s, %(size)s)'
                ),
                {
                    'run': delta.run_id,
                    'conversation': run[0] or '',
                    'first': next_seq,
                    'bodies': list(own.messages),
                    'index': delta.index,
                    'step': delta.step_index,
                    'state': delta.state,
                    'now': datetime.now(UTC),
                    'ranges': encode_ranges(resolved.ranges),
                    'size': resolved.size,
                },
            )
            return True

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
                self._sql('SELECT seq, body FROM {messages} WHERE run_id = %s AND seq >= %s AND seq < %s'),
                (run_id, first, end),
            )
            log: dict[int, str] = dict(await cur.fetchall())
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
                self._sql('SELECT seq, body FROM {messages} WHERE run_id = %s AND seq = ANY(%s::bigint[])'),
                (run_id, sorted(set(seqs))),
            )
            log: dict[int, str] = dict(await cur.fetchall())
        return await anyio.to_thread.run_sync(decode_log, run_id, log)

    def index_storage(self) -> PostgresIndex:
        return self._index

    async def aclose(self) -> None:
        """Close the store's own pool (a caller-owned pool stays open); later use opens a new one."""
        await self._db.aclose()

    async def _log_entries(self, cur: AsyncCursor[TupleRow], run_id: str, ranges: list[LogRange]) -> dict[int, str]:
        """The run's log entries that `ranges` name, by number, in one round trip."""
        await cur.execute(
            self._sql(
                'SELECT m.seq, m.body FROM {messages} AS m'
                ' JOIN unnest(%s::int[], %s::int[]) AS r(first, stop) ON m.seq >= r.first AND m.seq < r.stop'
                ' WHERE m.run_id = %s'
            ),
            ([first for first, _ in ranges], [end for _, end in ranges], run_id),
        )
        return dict(await cur.fetchall())

    async def _base_bodies(self, cur: AsyncCursor[TupleRow], run_id: str, index: int | None) -> list[str] | None:
        """The bodies of another run's snapshot that a first delta builds on, or `None` if there is none."""
        if index is None:
            return None
        # Hold the base run's row so that deleting its conversation cannot pull the log from under the read.
        await cur.execute(self._sql('SELECT 1 FROM {runs} WHERE run_id = %s FOR SHARE'), (run_id,))
        if await cur.fetchone() is None:
            return None
        await cur.execute(self._sql('SELECT ranges FROM {snapshots} WHERE run_id = %s AND idx = %s'), (run_id, index))
        found = await cur.fetchone()
        if found is None:
            return None
        ranges = decode_ranges(run_id, index, found[0])
        return gather_bodies(run_id, index, ranges, await self._log_entries(cur, run_id, ranges))

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
