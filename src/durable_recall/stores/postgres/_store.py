"""The shared store: PostgreSQL, for many workers on many hosts.

The store's methods run runs' and messages' statements; snapshot listings (`_snapshot_reads`),
batches of writes (`_writes`), erasure (`_erase`) and the index (`_index`) have modules of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio.to_thread

from ...base import PersistBatch, RunRecord, RunRegistration, Snapshot, SnapshotDelta
from ...index import IndexedRunRow
from .._batch_write import encode_deltas
from .._erasure import IdleConversation, ScrubReport
from .._log_refs import spans
from .._pending import PendingMark
from .._protocol import ConversationSummary
from .._run_rows import encode_metadata
from .._snapshot_rows import (
    ReadListing,
    decode_log,
    decode_log_bodies,
)
from ._connect import AsyncConnectionPoolLike, PostgresConnector
from ._erase import delete_idle as _erase_delete_idle
from ._erase import delete_run as _erase_delete_run
from ._erase import delete_runs_of as _erase_delete_runs_of
from ._erase import idle_conversations as _erase_idle_conversations
from ._erase import pending_marks as _erase_pending_marks
from ._erase import scrub as _erase_scrub
from ._index import PostgresIndex
from ._keys import PostgresKeys
from ._reads import (
    LIST_RUNS,
    RUN_COLUMNS,
    log_owners,
    logs,
    run_from_row,
)
from ._search_reads import rows_with_records, rows_with_records_by_id
from ._snapshot_reads import latest_snapshot, list_snapshots, read_listings
from ._vectors import PostgresVectors
from ._writes import write_batch

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow
    from pydantic_ai.messages import ModelMessage

__all__ = ('AsyncConnectionPoolLike', 'PostgresStepStore')


class PostgresStepStore(PostgresKeys):
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
                [`StoreUnavailableError`][durable_recall.errors.StoreUnavailableError].
            max_size: The most connections the store's own pool opens.

        Raises:
            StoreConfigurationError: Neither or both of `url` and `pool`, a malformed URL, or an
                unusable schema name.
            ImportError: psycopg is not installed.
        """
        self._db = PostgresConnector(url, pool, schema=schema, connect_timeout=connect_timeout, max_size=max_size)
        self._sql = self._db.sql
        self._transaction = self._db.transaction
        self._read = self._db.read
        self._index = PostgresIndex(self._db)
        self._vectors = PostgresVectors(self._db)

    def __repr__(self) -> str:
        return f'PostgresStepStore({self._db.describe()})'

    async def register_run(self, registration: RunRegistration) -> RunRecord:
        async with self._transaction() as cur:
            return await self._register(cur, registration)

    async def _register(self, cur: AsyncCursor[TupleRow], registration: RunRegistration) -> RunRecord:
        """`register_run` in the cursor's transaction."""
        record = registration.record(datetime.now(UTC))
        # A run deleted with its conversation between the two statements is inserted afresh.
        while True:
            await cur.execute(
                self._sql(
                    f'INSERT INTO {{runs}} ({RUN_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)'
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
            await cur.execute(self._sql(f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE run_id = %s'), (record.run_id,))
            existing = await cur.fetchone()
            if existing is not None:
                break
        stored = run_from_row(existing)
        if stored.token != registration.token:
            from ...base import RunIdConflictError  # loads pydantic-ai (see base._errors)

            raise RunIdConflictError(registration.run_id)
        return stored

    async def get_run(self, run_id: str) -> RunRecord | None:
        async with self._read() as cur:
            await cur.execute(self._sql(f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE run_id = %s'), (run_id,))
            row = await cur.fetchone()
        return None if row is None else run_from_row(row)

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        if not run_ids:
            return {}
        async with self._read() as cur:
            await cur.execute(
                self._sql(f'SELECT {RUN_COLUMNS} FROM {{runs}} WHERE run_id = ANY(%s::text[])'),
                (sorted(set(run_ids)),),
            )
            rows = await cur.fetchall()
        return {record.run_id: record for record in map(run_from_row, rows)}

    async def list_runs(
        self, *, conversation_id: str | None = None, parent_run_id: str | None = None
    ) -> list[RunRecord]:
        query = LIST_RUNS[conversation_id is not None, parent_run_id is not None]
        params = [value for value in (conversation_id, parent_run_id) if value is not None]
        async with self._read() as cur:
            await cur.execute(self._sql(query), params)
            rows = await cur.fetchall()
        return [run_from_row(row) for row in rows]

    async def conversation_summaries(self) -> tuple[list[ConversationSummary], int]:
        """Each conversation's run count and first and last start, counted in SQL (`ConversationSummaries`)."""
        async with self._transaction() as cur:
            await cur.execute(
                self._sql(
                    'SELECT conversation_id, COUNT(*), MIN(started_at), MAX(started_at) FROM {runs}'
                    " WHERE conversation_id <> '' GROUP BY conversation_id"
                )
            )
            rows = await cur.fetchall()
            await cur.execute(self._sql("SELECT COUNT(*) FROM {runs} WHERE COALESCE(conversation_id, '') = ''"))
            found = await cur.fetchone()
        summaries = [
            ConversationSummary(
                conversation_id=conversation_id,
                runs=runs,
                first_started_at=first.astimezone(UTC),
                last_started_at=last.astimezone(UTC),
            )
            for conversation_id, runs, first, last in rows
        ]
        return summaries, 0 if found is None else found[0]

    async def list_conversations(self) -> list[str]:
        async with self._read() as cur:
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

    async def save_batch(self, batch: PersistBatch) -> list[bool]:
        """Register the batch's run (if it names one) and save its deltas, in one transaction (see `BatchSaver`)."""
        if batch.registration is not None and not batch.deltas:
            await self.register_run(batch.registration)
            return []
        return await self._save(batch.deltas, batch.registration)

    async def _save(self, deltas: Sequence[SnapshotDelta], registration: RunRegistration | None = None) -> list[bool]:
        if not deltas:
            return []
        size = sum(len(body) for delta in deltas for body in delta.messages)
        # Compression is CPU work: a big batch goes to a thread rather than stalling the event loop.
        if size < _INLINE_ENCODE:
            encoded = encode_deltas(deltas)
        else:
            encoded = await anyio.to_thread.run_sync(encode_deltas, deltas)
        async with self._transaction() as cur:
            if registration is not None:
                await self._register(cur, registration)
            return await write_batch(cur, self._db, deltas, encoded)

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        return await list_snapshots(self._db, run_id, include_interrupted, after, None)

    async def list_snapshots_sharing(
        self, run_id: str, *, after: int, shared: MutableMapping[object, ModelMessage]
    ) -> list[Snapshot]:
        """`list_snapshots(include_interrupted=True)`, decoding through the caller's cache (see `SharingReader`)."""
        return await list_snapshots(self._db, run_id, True, after, shared)

    async def read_listings(self, after: Mapping[str, int]) -> dict[str, ReadListing]:
        """Several runs' listings in one transaction of two statements (see `SharingReader.read_listings`)."""
        return await read_listings(self._db, after)

    async def latest_snapshot(self, run_id: str, *, include_interrupted: bool = False) -> Snapshot | None:
        return await latest_snapshot(self._db, run_id, include_interrupted)

    async def delete_conversation(self, conversation_id: str) -> int:
        async with self._transaction() as cur:
            # The index lock first, so that no catch-up of the conversation interleaves (see
            # `_index`); then runs: deleting a run's row waits for any save holding it,
            # and each later statement reads afresh, so that save's messages are deleted too.
            deleted = await _erase_delete_runs_of(cur, self._db, conversation_id, None)
        assert deleted is not None, 'a delete without a time bound always deletes'
        return deleted

    async def delete_run(self, run_id: str) -> bool:
        """Delete one run (see `ErasableStore`); its conversation is re-indexed without it on the next search."""
        async with self._transaction() as cur:
            return await _erase_delete_run(cur, self._db, run_id)

    async def idle_conversations(self, before: datetime) -> list[IdleConversation]:
        """Conversations with no run started or snapshot saved since `before`, oldest first (see `ErasableStore`)."""
        async with self._read() as cur:
            found = await _erase_idle_conversations(cur, self._db, before)
        return [IdleConversation(conversation_id=key, last_activity=last.astimezone(UTC)) for key, last in found]

    async def delete_idle_conversation(self, conversation_id: str, before: datetime) -> int | None:
        """Delete the conversation if still idle since `before`, checked in the delete's transaction."""
        return await _erase_delete_idle(self._db, conversation_id, before)

    async def scrub(self) -> ScrubReport:
        """`VACUUM FULL` the tables deletes touch (exclusive locks while each is rewritten): see `_erase.scrub`."""
        return await _erase_scrub(self._db)

    async def log_owners(self, run_id: str, seqs: Sequence[int]) -> dict[int, tuple[str, int]]:
        """Where the run's log entries `seqs` keep their bodies: `(run_id, seq)`, their own or an earlier run's.

        An inherited entry is a reference; `durable-recall check` names a damaged or missing body
        once, in the run that holds it, rather than in every run that inherited it.
        """
        if not seqs:
            return {}
        async with self._read() as cur:
            return await log_owners(cur, self._db, run_id, sorted(set(seqs)))

    async def read_messages(self, run_id: str, seqs: Sequence[int]) -> dict[int, ModelMessage]:
        if not seqs:
            return {}
        async with self._read() as cur:
            log = (await logs(cur, self._db, [(run_id, *span) for span in spans(seqs)])).get(run_id, {})
        return await anyio.to_thread.run_sync(decode_log, run_id, log)

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        asked = {run_id: sorted(set(seqs)) for run_id, seqs in wanted.items() if seqs}
        if not asked:
            return {}
        async with self._read() as cur:
            ranges = [(run_id, *span) for run_id, seqs in asked.items() for span in spans(seqs)]
            found = await logs(cur, self._db, ranges)

        def decode() -> dict[str, dict[int, ModelMessage]]:
            return {run_id: decode_log(run_id, log) for run_id, log in found.items()}

        # What an answer shows is a few dozen small bodies: decoded here, they cost less than a
        # thread hop (and a fresh process's first hop starts the worker thread). Big reads go to a thread.
        size = sum(len(body) for log in found.values() for body in log.values() if body is not None)
        if size < _INLINE_DECODE:
            return decode()
        return await anyio.to_thread.run_sync(decode)

    async def read_log_bodies(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, str]]:
        """`read_logs` as JSON text (see `LogBodies`): inflating a few dozen bodies costs less than a thread hop."""
        asked = {run_id: sorted(set(seqs)) for run_id, seqs in wanted.items() if seqs}
        if not asked:
            return {}
        async with self._read() as cur:
            found = await logs(
                cur, self._db, [(run_id, *span) for run_id, seqs in asked.items() for span in spans(seqs)]
            )
        return {run_id: decode_log_bodies(run_id, log) for run_id, log in found.items()}

    async def pending_marks(self) -> list[PendingMark]:
        """Every pending row as stored, with its run's conversation and last snapshot (`PendingMarks`)."""
        return await _erase_pending_marks(self._db)

    def index_storage(self) -> PostgresIndex:
        return self._index

    async def indexed_runs_with_records(
        self, run_keys: Sequence[int]
    ) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]]:
        """Index rows by run key with their runs' records, in one statement (`search.RowsWithRecords`)."""
        return await rows_with_records(self._db, run_keys)

    async def index_rows_with_records(
        self, run_ids: Sequence[str]
    ) -> tuple[dict[str, IndexedRunRow], dict[str, RunRecord]]:
        """Runs' index rows by run id with their records, in one statement (`index.IndexRowsWithRecords`)."""
        return await rows_with_records_by_id(self._db, run_ids)

    def vector_storage(self) -> PostgresVectors:
        """Message vectors for hybrid ranking, in `{vectors}` beside the index."""
        return self._vectors

    async def aclose(self) -> None:
        """Close the store's own pool (a caller-owned pool stays open); later use opens a new one."""
        await self._db.aclose()


_INLINE_ENCODE = 64 * 1024
"""Batches with fewer bytes of new messages are compressed on the event loop (a thread hop costs more)."""

_INLINE_DECODE = 32 * 1024
"""`read_logs` decodes fewer stored bytes than this on the event loop (a thread hop costs more)."""
