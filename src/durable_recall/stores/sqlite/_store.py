"""The embedded store: one SQLite file, shared safely by the processes of one host."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Generator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

import anyio.to_thread

from ...base import (
    CorruptRunError,
    CorruptSnapshotError,
    PersistBatch,
    RunRecord,
    RunRegistration,
    Snapshot,
    SnapshotDelta,
    StoredBody,
    from_micros,
    to_micros,
)
from ...index import IndexedRunRow
from .._batch_write import encode_deltas
from .._erasure import IdleConversation, ScrubReport
from .._log_refs import spans
from .._pending import PendingMark
from .._protocol import ConversationSummary
from .._run_rows import run_record
from .._snapshot_rows import (
    ReadListing,
    SnapshotRow,
    decode_log,
    decode_log_bodies,
    decode_ranges,
    decode_snapshot,
    decode_snapshots,
)
from .._summaries import summarize_conversations
from . import _reads, _writes
from ._connection import SqliteConnection, transaction
from ._erase import delete_conversation as _erase_delete_conversation
from ._erase import delete_idle_conversation as _erase_delete_idle_conversation
from ._erase import delete_run as _erase_delete_run
from ._erase import idle_conversations as _erase_idle_conversations
from ._erase import scrub as _erase_scrub
from ._index import SqliteIndex
from ._keys import SqliteKeys
from ._search_reads import decode_rows_with_records, rows_with_records
from ._vectors import SqliteVectors

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('SqliteStepStore',)


class SqliteStepStore(SqliteKeys):
    """Keeps runs and snapshots in one SQLite file, in WAL mode.

    Several processes on one host may share the file: every write is one `BEGIN IMMEDIATE`
    transaction, so writers queue on SQLite's lock (for up to `busy_timeout` seconds) instead
    of interleaving. Do not put the file on a network filesystem: WAL needs shared memory.

    The store holds one connection, opened by the constructor so that a bad path fails there
    (tables are created or migrated on first use), and runs every query in a worker thread so
    the event loop never blocks on disk or on another process's lock. Construct one store per
    process (not before a fork).
    """

    def __init__(self, database: str | os.PathLike[str] = 'durable-recall.db', *, busy_timeout: float = 30.0) -> None:
        """Open (creating if needed) the database file.

        Args:
            database: The SQLite file; its directory must exist and be writable.
            busy_timeout: Seconds a write waits for another process's write lock before it
                raises [`StoreUnavailableError`][durable_recall.errors.StoreUnavailableError].

        Raises:
            StoreConfigurationError: The file cannot be created or opened for writing, is not a
                SQLite database, or holds a schema written by a newer durable-recall.
        """
        self._path = os.fspath(database)
        self._db = SqliteConnection(self._path, busy_timeout)
        self._index = SqliteIndex(self._db)
        self._vectors = SqliteVectors(self._db)

    def __repr__(self) -> str:
        return f'SqliteStepStore({self._path!r})'

    async def register_run(self, registration: RunRegistration) -> RunRecord:
        return await self._db.call(lambda conn: _writes.register_run(conn, registration))

    async def get_run(self, run_id: str) -> RunRecord | None:
        with _text_of_runs([run_id]):
            return await self._db.lookup_read(
                lambda conn: _reads.run_rows(conn, [run_id]), lambda rows: run_record(*rows[0]) if rows else None
            )

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        with _text_of_runs(run_ids):
            return await self._db.lookup_read(
                lambda conn: _reads.run_rows(conn, run_ids),
                lambda rows: {record.run_id: record for record in (run_record(*row) for row in rows)},
            )

    async def list_runs(
        self, *, conversation_id: str | None = None, parent_run_id: str | None = None
    ) -> list[RunRecord]:
        with _text_of_runs([]):
            return await self._db.read(
                lambda conn: _reads.runs_listed(conn, conversation_id, parent_run_id),
                lambda rows: [run_record(*row) for row in rows],
            )

    async def list_conversations(self) -> list[str]:
        with _text_of_runs([]):
            return await self._db.call(_reads.conversations)

    async def conversation_summaries(self) -> tuple[list[ConversationSummary], int]:
        """Each conversation's run count and first and last start, counted in SQL (`ConversationSummaries`)."""
        found = await self._db.call(_reads.conversation_summaries)
        if found is None:
            return summarize_conversations(await self.list_runs())
        rows, loose = found
        try:
            summaries = [
                ConversationSummary(
                    conversation_id=conversation_id,
                    runs=runs,
                    first_started_at=from_micros(first),
                    last_started_at=from_micros(last),
                )
                for conversation_id, runs, first, last in rows
            ]
        except OverflowError:  # a start time past the years a datetime holds: reading the runs names it
            return summarize_conversations(await self.list_runs())
        return summaries, loose

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

        def save() -> list[bool]:
            encoded = encode_deltas(deltas)  # compression is CPU work: before the lock, not under it
            return self._db.locked(lambda conn: _writes.write_batch(conn, deltas, encoded, registration))

        return await anyio.to_thread.run_sync(save)

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        return await self._list(run_id, include_interrupted, after, None)

    async def list_snapshots_sharing(
        self, run_id: str, *, after: int, shared: MutableMapping[object, ModelMessage]
    ) -> list[Snapshot]:
        """`list_snapshots(include_interrupted=True)`, decoding through the caller's cache (see `SharingReader`)."""
        return await self._list(run_id, True, after, shared)

    async def _list(
        self, run_id: str, include_interrupted: bool, after: int, shared: MutableMapping[object, ModelMessage] | None
    ) -> list[Snapshot]:
        def read(conn: sqlite3.Connection) -> tuple[list[SnapshotRow], dict[int, StoredBody | None]]:
            return _reads.snapshot_rows(conn, run_id, include_interrupted=include_interrupted, after=after)

        with _text_of_log(run_id):
            return await self._db.read(read, lambda found: decode_snapshots(*found, shared))

    async def read_listings(self, after: Mapping[str, int]) -> dict[str, ReadListing]:
        """Several runs' listings in one transaction and one worker-thread hop (see `SharingReader.read_listings`)."""
        wanted = dict(after)

        def read(conn: sqlite3.Connection) -> dict[str, ReadListing]:
            out: dict[str, ReadListing] = {}
            with transaction(conn, 'BEGIN'):
                for run_id, seen in wanted.items():
                    try:
                        with _text_of_log(run_id):
                            found = _reads.listing_rows(conn, run_id, include_interrupted=True, after=seen)
                    except CorruptSnapshotError as error:
                        out[run_id] = ReadListing((), {}, error)
                    else:
                        out[run_id] = ReadListing(*found)
            return out

        return await self._db.call(read)

    async def latest_snapshot(self, run_id: str, *, include_interrupted: bool = False) -> Snapshot | None:
        def read(conn: sqlite3.Connection) -> tuple[SnapshotRow, dict[int, StoredBody | None]] | None:
            with transaction(conn, 'BEGIN'):
                row = _reads.latest_snapshot_row(conn, run_id, include_interrupted=include_interrupted)
                if row is None:
                    return None
                return row, _reads.log_entries(conn, run_id, decode_ranges(run_id, row.index, row.ranges))

        with _text_of_log(run_id):
            return await self._db.read(read, lambda found: None if found is None else decode_snapshot(*found))

    async def delete_conversation(self, conversation_id: str) -> int:
        """Delete the conversation's runs and all they hold, zeroing the deleted bytes (`scrub` empties the log)."""
        return await self._db.call(lambda conn: _erase_delete_conversation(conn, conversation_id))

    async def delete_run(self, run_id: str) -> bool:
        """Delete one run (see `ErasableStore`); its conversation is re-indexed without it on the next search."""
        return await self._db.call(lambda conn: _erase_delete_run(conn, run_id))

    async def idle_conversations(self, before: datetime) -> list[IdleConversation]:
        """Conversations with no run started or snapshot saved since `before`, oldest first (see `ErasableStore`)."""
        found = await self._db.call(lambda conn: _erase_idle_conversations(conn, to_micros(before)))
        return [IdleConversation(conversation_id=key, last_activity=from_micros(last)) for key, last in found]

    async def delete_idle_conversation(self, conversation_id: str, before: datetime) -> int | None:
        """Delete the conversation if still idle since `before`, checked in the delete's transaction."""
        cutoff = to_micros(before)
        return await self._db.call(lambda conn: _erase_delete_idle_conversation(conn, conversation_id, cutoff))

    async def scrub(self) -> ScrubReport:
        """Empty the write-ahead log (and vacuum free pages a file without auto-vacuum keeps): see `_erase.scrub`."""
        return await self._db.call(_erase_scrub)

    async def read_messages(self, run_id: str, seqs: Sequence[int]) -> dict[int, ModelMessage]:
        wanted = sorted(set(seqs))

        def read(conn: sqlite3.Connection) -> dict[int, StoredBody | None]:
            with transaction(conn, 'BEGIN'):
                return _reads.log_numbers(conn, run_id, wanted)

        with _text_of_log(run_id):
            return await self._db.lookup_read(read, lambda log: decode_log(run_id, log))

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        with _text_of_log(', '.join(wanted)):
            return await self._db.lookup_read(
                self._logs_query(wanted), lambda logs: {run_id: decode_log(run_id, log) for run_id, log in logs.items()}
            )

    async def read_log_bodies(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, str]]:
        """`read_logs` as JSON text (see `LogBodies`): one point read, bodies inflated and checked inline."""
        with _text_of_log(', '.join(wanted)):
            return await self._db.lookup_read(
                self._logs_query(wanted),
                lambda logs: {run_id: decode_log_bodies(run_id, log) for run_id, log in logs.items()},
            )

    @staticmethod
    def _logs_query(
        wanted: Mapping[str, Sequence[int]],
    ) -> Callable[[sqlite3.Connection], dict[str, dict[int, StoredBody | None]]]:
        asked = {run_id: sorted(set(seqs)) for run_id, seqs in wanted.items() if seqs}

        def read(conn: sqlite3.Connection) -> dict[str, dict[int, StoredBody | None]]:
            with transaction(conn, 'BEGIN'):
                return _reads.logs(conn, [(run_id, *span) for run_id, seqs in asked.items() for span in spans(seqs)])

        return read

    async def log_owners(self, run_id: str, seqs: Sequence[int]) -> dict[int, tuple[str, int]]:
        """Where the run's log entries `seqs` keep their bodies: `(run_id, seq)`, their own or an earlier run's.

        An inherited entry is a reference; `durable-recall check` names a damaged or missing body
        once, in the run that holds it, rather than in every run that inherited it.
        """
        wanted = sorted(set(seqs))

        def read(conn: sqlite3.Connection) -> dict[int, tuple[str, int]]:
            with transaction(conn, 'BEGIN'):
                return _reads.log_owners(conn, run_id, wanted)

        return await self._db.call(read)

    async def mistyped_rows(self) -> list[tuple[str, str]]:
        """Rows holding a value of another type than its column declares, as `(run, what)`: a full scan.

        SQLite keeps whatever type a damaged or hand-edited file holds, and a row whose key is
        mistyped drops out of the reads that look it up. The reads name most such rows (a gap in
        a listing, a hole in a log), but some only a scan can see (a run whose conversation id
        is a BLOB is simply not listed under it), so `durable-recall check` runs this one.
        """
        return await self._db.call(_reads.mistyped_rows)

    async def unowned_log_rows(self) -> list[tuple[str, str]]:
        """Message-log rows naming a run number that no run row has, as `(run, what)`: a full scan.

        The log names its runs by number; a run row lost to damage leaves its log rows naming a
        number nothing has, which `durable-recall check` reports (see `_reads.unowned_log_rows`).
        """
        return await self._db.call(_reads.unowned_log_rows)

    async def pending_marks(self) -> list[PendingMark]:
        """Every pending row as stored, with its run's conversation and last snapshot (`PendingMarks`)."""
        rows = await self._db.call(lambda conn: conn.execute(_PENDING_MARKS).fetchall())
        return [PendingMark(row[0], row[1], row[2], bool(row[3]), row[4], row[5]) for row in rows]

    def index_storage(self) -> SqliteIndex:
        return self._index

    async def indexed_runs_with_records(
        self, run_keys: Sequence[int]
    ) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]]:
        """Index rows by run key with their runs' records, in one point read (`search.RowsWithRecords`)."""
        if not run_keys:
            return {}, {}
        with _text_of_runs([]):
            return await self._db.lookup_read(lambda conn: rows_with_records(conn, run_keys), decode_rows_with_records)

    async def index_rows_with_records(
        self, run_ids: Sequence[str]
    ) -> tuple[dict[str, IndexedRunRow], dict[str, RunRecord]]:
        """Runs' index rows by run id with their records, in one point read (`index.IndexRowsWithRecords`)."""
        if not run_ids:
            return {}, {}
        with _text_of_runs([]):
            rows, records = await self._db.lookup_read(
                lambda conn: rows_with_records(conn, run_ids, by='run_id'), decode_rows_with_records
            )
        return {row.run_id: row for row in rows.values()}, records

    def vector_storage(self) -> SqliteVectors:
        """Message vectors for hybrid ranking, in `dr_vectors` of the same file."""
        return self._vectors

    async def aclose(self) -> None:
        """Close the connection; a later call on the store opens a new one."""
        await self._db.close()


_PENDING_MARKS = (
    'SELECT p.conversation_id, p.run_id, p.upto, r.run_id IS NOT NULL, r.conversation_id,'
    " (SELECT MAX(s.idx) FROM dr_snapshots AS s WHERE s.run_id = p.run_id AND typeof(s.idx) = 'integer')"
    ' FROM dr_pending AS p LEFT JOIN dr_runs AS r ON r.run_id = p.run_id ORDER BY p.run_id'
)

_NOT_UTF8 = 'Could not decode to UTF-8'
"""How Python's sqlite3 refuses a TEXT value that is not UTF-8 (it raises before any decoder sees it)."""


@contextmanager
def _text_of_log(run_id: str) -> Generator[None]:
    """Name a stored text value that is not UTF-8 (a damaged body or row) as the run's corruption."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if not str(error).startswith(_NOT_UTF8):
            raise
        raise CorruptSnapshotError(run_id, -1, f'a stored value is not UTF-8 text ({error})') from error


@contextmanager
def _text_of_runs(run_ids: Sequence[str]) -> Generator[None]:
    """The same for run rows (the run is unknown when a listing hits it)."""
    try:
        yield
    except sqlite3.OperationalError as error:
        if not str(error).startswith(_NOT_UTF8):
            raise
        named = ', '.join(run_ids) or '(listed)'
        raise CorruptRunError(named, f'a stored value is not UTF-8 text ({error})') from error
