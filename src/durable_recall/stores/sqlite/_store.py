"""The embedded store: one SQLite file, shared safely by the processes of one host."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio.to_thread
from pydantic_ai.messages import ModelMessage

from ...base import (
    RunIdConflictError,
    RunRecord,
    RunRegistration,
    Snapshot,
    SnapshotDelta,
    StoreConfigurationError,
    StoredBody,
    StoreUnavailableError,
    format_timestamp,
)
from .._chain import LogRange
from .._migrations import SCHEMA_VERSION, SQLITE_META, SQLITE_MIGRATIONS, check_version
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
from ._index import SqliteIndex, forget_conversation, mark_pending
from ._index import transaction as _transaction

__all__ = ('SqliteStepStore',)

_T = TypeVar('_T')
_R = TypeVar('_R')

_RUN_COLUMNS = 'run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token'
_SNAPSHOT_COLUMNS = 'idx, step_index, state, saved_at, ranges, size'

_CHUNK = 500  # bound parameters per statement, under the 999 of old SQLite builds

# Primary SQLite result codes (the low byte of an extended code).
_RETRYABLE_CODES = frozenset({5, 6, 10, 13, 15})  # BUSY, LOCKED, IOERR, FULL, PROTOCOL
_CONFIGURATION_CODES = frozenset({3, 8, 14, 23, 26})  # PERM, READONLY, CANTOPEN, AUTH, NOTADB


class SqliteStepStore:
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
                raises [`StoreUnavailableError`][durable_recall.StoreUnavailableError].

        Raises:
            StoreConfigurationError: The file cannot be created or opened for writing, is not a
                SQLite database, or holds a schema written by a newer durable-recall.
        """
        self._path = os.fspath(database)
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._schema_ready = False
        self._conn: sqlite3.Connection | None = self._open()
        self._index = SqliteIndex(self._call)

    def __repr__(self) -> str:
        return f'SqliteStepStore({self._path!r})'

    async def register_run(self, registration: RunRegistration) -> RunRecord:
        def write(conn: sqlite3.Connection) -> RunRecord:
            with _transaction(conn, 'BEGIN IMMEDIATE'):
                row = conn.execute(f'SELECT {_RUN_COLUMNS} FROM dr_runs WHERE run_id = ?', (registration.run_id,))
                existing = row.fetchone()
                if existing is not None:
                    record = run_record(*existing)
                    if record.token != registration.token:
                        raise RunIdConflictError(registration.run_id)
                    return record
                record = registration.record(datetime.now(UTC))
                conn.execute(
                    f'INSERT INTO dr_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)',
                    (
                        record.run_id,
                        record.conversation_id,
                        record.parent_run_id,
                        record.agent_name,
                        encode_metadata(record.metadata),
                        format_timestamp(record.started_at),
                        record.token,
                    ),
                )
                return record

        return await self._call(write)

    async def get_run(self, run_id: str) -> RunRecord | None:
        def read(conn: sqlite3.Connection) -> Any:
            return conn.execute(f'SELECT {_RUN_COLUMNS} FROM dr_runs WHERE run_id = ?', (run_id,)).fetchone()

        return await self._read(read, lambda row: None if row is None else run_record(*row))

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        wanted = sorted(set(run_ids))

        def read(conn: sqlite3.Connection) -> list[Any]:
            rows: list[Any] = []
            with _transaction(conn, 'BEGIN'):
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    marks = ', '.join('?' * len(chunk))
                    rows += conn.execute(f'SELECT {_RUN_COLUMNS} FROM dr_runs WHERE run_id IN ({marks})', chunk)
            return rows

        return await self._read(
            read, lambda rows: {record.run_id: record for record in (run_record(*row) for row in rows)}
        )

    async def list_runs(
        self, *, conversation_id: str | None = None, parent_run_id: str | None = None
    ) -> list[RunRecord]:
        conditions: list[str] = []
        params: list[str] = []
        if conversation_id is not None:
            conditions.append('conversation_id = ?')
            params.append(conversation_id)
        if parent_run_id is not None:
            conditions.append('parent_run_id = ?')
            params.append(parent_run_id)
        where = f' WHERE {" AND ".join(conditions)}' if conditions else ''
        query = f'SELECT {_RUN_COLUMNS} FROM dr_runs{where} ORDER BY started_at, run_id'

        def read(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(query, params).fetchall()

        return await self._read(read, lambda rows: [run_record(*row) for row in rows])

    async def list_conversations(self) -> list[str]:
        def read(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                'SELECT DISTINCT conversation_id FROM dr_runs'
                " WHERE conversation_id IS NOT NULL AND conversation_id <> '' ORDER BY conversation_id"
            )
            return [row[0] for row in rows]

        return await self._call(read)

    async def save_snapshot(self, delta: SnapshotDelta) -> bool:
        return (await self._save([delta]))[0]

    async def save_snapshots(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        return await self._save(deltas)

    async def _save(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        if not deltas:
            return []

        def save() -> list[bool]:
            encoded = encode_deltas(deltas)  # compression is CPU work: before the lock, not under it
            return self._locked(lambda conn: _write_batch(conn, deltas, encoded))

        return await anyio.to_thread.run_sync(save)

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        def read(conn: sqlite3.Connection) -> tuple[list[SnapshotRow], dict[int, StoredBody | None]]:
            with _transaction(conn, 'BEGIN'):
                query = f'SELECT {_SNAPSHOT_COLUMNS} FROM dr_snapshots WHERE run_id = ? AND idx > ? ORDER BY idx'
                rows = [SnapshotRow(run_id, *row) for row in conn.execute(query, (run_id, after))]
                rows = [row for row in rows if row.is_shown(include_interrupted)]
                if not rows:
                    return [], {}
                first, end = log_span(rows)
                return rows, _log_span(conn, run_id, first, end)

        def decode(found: tuple[list[SnapshotRow], dict[int, StoredBody | None]]) -> list[Snapshot]:
            rows, log = found
            return decode_snapshots(rows, log)

        return await self._read(read, decode)

    async def latest_snapshot(self, run_id: str, *, include_interrupted: bool = False) -> Snapshot | None:
        # A row of unknown state is not filtered out: it is returned, and raises when decoded.
        condition = '' if include_interrupted else " AND state <> 'interrupted'"
        query = f'SELECT {_SNAPSHOT_COLUMNS} FROM dr_snapshots WHERE run_id = ?{condition} ORDER BY idx DESC LIMIT 1'

        def read(conn: sqlite3.Connection) -> tuple[SnapshotRow, dict[int, StoredBody | None]] | None:
            with _transaction(conn, 'BEGIN'):
                found = conn.execute(query, (run_id,)).fetchone()
                if found is None:
                    return None
                row = SnapshotRow(run_id, *found)
                return row, _log_entries(conn, run_id, decode_ranges(run_id, row.index, row.ranges))

        return await self._read(read, lambda found: None if found is None else decode_snapshot(*found))

    async def delete_conversation(self, conversation_id: str) -> int:
        def write(conn: sqlite3.Connection) -> int:
            runs = 'SELECT run_id FROM dr_runs WHERE conversation_id = ?'
            with _transaction(conn, 'BEGIN IMMEDIATE'):
                forget_conversation(conn, conversation_id)
                conn.execute(f'DELETE FROM dr_messages WHERE run_id IN ({runs})', (conversation_id,))
                conn.execute(f'DELETE FROM dr_snapshots WHERE run_id IN ({runs})', (conversation_id,))
                return conn.execute('DELETE FROM dr_runs WHERE conversation_id = ?', (conversation_id,)).rowcount

        return await self._call(write)

    async def read_messages(self, run_id: str, seqs: Sequence[int]) -> dict[int, ModelMessage]:
        wanted = sorted(set(seqs))

        def read(conn: sqlite3.Connection) -> dict[int, StoredBody | None]:
            log: dict[int, StoredBody | None] = {}
            with _transaction(conn, 'BEGIN'):
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    marks = ', '.join('?' * len(chunk))
                    query = f'{_SELECT_LOG} WHERE m.run_id = ? AND m.seq IN ({marks})'
                    log.update(conn.execute(query, (run_id, *chunk)).fetchall())
            return log

        return await self._read(read, lambda log: decode_log(run_id, log))

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        asked = {run_id: sorted(set(seqs)) for run_id, seqs in wanted.items() if seqs}

        def read(conn: sqlite3.Connection) -> dict[str, dict[int, StoredBody | None]]:
            logs: dict[str, dict[int, StoredBody | None]] = {}
            with _transaction(conn, 'BEGIN'):
                for run_id, seqs in asked.items():
                    log: dict[int, StoredBody | None] = {}
                    for start in range(0, len(seqs), _CHUNK):
                        chunk = seqs[start : start + _CHUNK]
                        marks = ', '.join('?' * len(chunk))
                        query = f'{_SELECT_LOG} WHERE m.run_id = ? AND m.seq IN ({marks})'
                        log.update(conn.execute(query, (run_id, *chunk)).fetchall())
                    if log:
                        logs[run_id] = log
            return logs

        return await self._read(read, lambda logs: {run_id: decode_log(run_id, log) for run_id, log in logs.items()})

    def index_storage(self) -> SqliteIndex:
        return self._index

    async def aclose(self) -> None:
        """Close the connection; a later call on the store opens a new one."""

        def close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                    self._schema_ready = False

        await anyio.to_thread.run_sync(close)

    async def _call(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `query` in a worker thread holding the connection."""
        return await anyio.to_thread.run_sync(self._locked, query)

    async def _read(self, query: Callable[[sqlite3.Connection], _T], finish: Callable[[_T], _R]) -> _R:
        """Run `query` in a worker thread holding the connection, then `finish` on its result.

        `finish` (decoding messages, which is CPU work) runs in the same thread after the
        connection is released, so another query need not wait for it.
        """
        return await anyio.to_thread.run_sync(lambda: finish(self._locked(query)))

    def _locked(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            try:
                return query(self._connection())
            except sqlite3.Error as error:
                translated = self._translate(error)
                if translated is None:
                    raise
                raise translated from error

    def _open(self) -> sqlite3.Connection:
        """Connect, switch to WAL and check the schema version, so a bad file fails right here."""
        try:
            conn = sqlite3.connect(
                self._path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise self._unusable(error) from error
        try:
            # Switching to WAL writes the file header, so an unwritable file fails here, not on a save.
            conn.execute('PRAGMA journal_mode = WAL').fetchone()
            conn.execute('PRAGMA cache_size = -32768')  # 32 MiB of pages: the index tables are read at random
            self._schema_version(conn)
        except sqlite3.Error as error:
            conn.close()
            raise (self._translate(error) or self._unusable(error)) from error
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        """The open connection, opened and migrated if needed; call with `_lock` held."""
        if self._conn is None:
            self._conn = self._open()
        if not self._schema_ready:
            self._migrate(self._conn)
            self._schema_ready = True
        return self._conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if self._schema_version(conn) == SCHEMA_VERSION:
            return
        with _transaction(conn, 'BEGIN IMMEDIATE'):
            conn.execute(SQLITE_META)
            version = self._schema_version(conn)
            for statements in SQLITE_MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO dr_meta (key, value) VALUES ('schema_version', ?)"
                ' ON CONFLICT (key) DO UPDATE SET value = excluded.value',
                (str(SCHEMA_VERSION),),
            )

    def _schema_version(self, conn: sqlite3.Connection) -> int:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dr_meta'").fetchone() is None:
            return 0
        row = conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            return 0
        try:
            version = int(row[0])
        except ValueError:
            raise StoreConfigurationError(
                f'SQLite database {self._path!r} records schema version {row[0]!r}, which is not a number: '
                'the file was not written by durable-recall; point the store at another file.'
            ) from None
        check_version(version, f'SQLite database {self._path!r}')
        return version

    def _unusable(self, error: sqlite3.Error) -> StoreConfigurationError:
        return StoreConfigurationError(
            f'cannot use {self._path!r} as a SQLite store ({error}): pass a path whose directory exists and '
            'is writable by this process, to a new file or an existing durable-recall database.'
        )

    def _translate(self, error: sqlite3.Error) -> Exception | None:
        code = getattr(error, 'sqlite_errorcode', None)
        if code is None:
            return None
        if code & 0xFF in _RETRYABLE_CODES:
            return StoreUnavailableError(
                f'SQLite database {self._path!r} is unavailable ({error}); another process may have held its '
                f'write lock for over {self._busy_timeout}s, or the disk is full or failing. Retry, or raise '
                '`busy_timeout`.'
            )
        if code & 0xFF in _CONFIGURATION_CODES:
            return self._unusable(error)
        return None


def _write_batch(
    conn: sqlite3.Connection, deltas: Sequence[SnapshotDelta], encoded: Sequence[Sequence[StoredBody]]
) -> list[bool]:
    """Store the deltas in one write transaction: every new one, or (on any error) none."""
    batch = BatchWrite()
    tips: dict[str, RunTip] = {}
    with _transaction(conn, 'BEGIN IMMEDIATE'):
        for delta, bodies in zip(deltas, encoded, strict=True):
            tip = tips.get(delta.run_id)
            if tip is None:
                tip = tips[delta.run_id] = _tip(conn, delta.run_id)
            base = None
            if delta.base_run_id is not None and delta.index == tip.next_index == 0:
                _insert(conn, batch)  # the base may be a run this batch has just written
                base = _base_log(conn, delta.base_run_id, delta.base_index, tip.conversation_id)
            batch.add(tip, delta, bodies, base)
        _insert(conn, batch)
        for run_id, (conversation_id, upto) in batch.pending.items():
            mark_pending(conn, conversation_id, run_id, upto)
    return batch.results


def _tip(conn: sqlite3.Connection, run_id: str) -> RunTip:
    """The run's chain tip, read in the save's transaction.

    Raises:
        SnapshotChainError: The run is not registered.
    """
    found = conn.execute(
        'SELECT conversation_id,'
        ' (SELECT COALESCE(MAX(idx) + 1, 0) FROM dr_snapshots WHERE run_id = ?1),'
        ' (SELECT ranges FROM dr_snapshots WHERE run_id = ?1 ORDER BY idx DESC LIMIT 1),'
        ' (SELECT COALESCE(MAX(seq) + 1, 0) FROM dr_messages WHERE run_id = ?1)'
        ' FROM dr_runs WHERE run_id = ?1',
        (run_id,),
    ).fetchone()
    if found is None:
        raise unregistered_run(run_id)
    return RunTip(run_id, *found)


def _insert(conn: sqlite3.Connection, batch: BatchWrite) -> None:
    rows, snapshots = batch.take()
    conn.executemany(
        'INSERT INTO dr_messages (run_id, seq, body, ref_run_id, ref_seq) VALUES (?, ?, ?, ?, ?)',
        [(row.run_id, row.seq, row.body, row.ref_run_id, row.ref_seq) for row in rows],
    )
    conn.executemany(
        f'INSERT INTO dr_snapshots (run_id, {_SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)',
        [(s.run_id, s.index, s.step_index, s.state, format_timestamp(s.saved_at), s.ranges, s.size) for s in snapshots],
    )


def _base_log(conn: sqlite3.Connection, run_id: str, index: int | None, conversation_id: str | None) -> BaseLog | None:
    """The snapshot a first delta builds on, or `None` if the store holds none."""
    if index is None:
        return None
    found = conn.execute(
        'SELECT r.conversation_id, s.ranges FROM dr_runs AS r'
        ' JOIN dr_snapshots AS s ON s.run_id = r.run_id AND s.idx = ? WHERE r.run_id = ?',
        (index, run_id),
    ).fetchone()
    if found is None:
        return None
    shared = found[0] == conversation_id
    ranges = decode_ranges(run_id, index, found[1])
    entries: dict[int, BaseEntry] = {}
    for first, end in ranges:
        if shared:
            # Where each entry's body lives: the row itself, or the one its reference names.
            rows = conn.execute(
                'SELECT seq, COALESCE(ref_run_id, run_id), COALESCE(ref_seq, seq) FROM dr_messages'
                ' WHERE run_id = ? AND seq >= ? AND seq < ?',
                (run_id, first, end),
            )
            entries.update((seq, BaseEntry(owner, at)) for seq, owner, at in rows)
        else:
            rows = conn.execute(f'{_SELECT_LOG} WHERE m.run_id = ? AND m.seq >= ? AND m.seq < ?', (run_id, first, end))
            entries.update((seq, BaseEntry(run_id, seq, body)) for seq, body in rows if body is not None)
    return BaseLog(shared, base_entries_at(run_id, index, ranges, entries))


_SELECT_LOG = (
    'SELECT m.seq, COALESCE(m.body, t.body) FROM dr_messages AS m'
    ' LEFT JOIN dr_messages AS t ON t.run_id = m.ref_run_id AND t.seq = m.ref_seq'
)
"""Log entries with references followed (one hop: a reference always names a row with a body)."""


def _log_span(conn: sqlite3.Connection, run_id: str, first: int, end: int) -> dict[int, StoredBody | None]:
    """The run's log entries numbered `first` up to `end` (`None`: a reference to a row that is gone)."""
    rows = conn.execute(f'{_SELECT_LOG} WHERE m.run_id = ? AND m.seq >= ? AND m.seq < ?', (run_id, first, end))
    return dict(rows.fetchall())


def _log_entries(conn: sqlite3.Connection, run_id: str, ranges: list[LogRange]) -> dict[int, StoredBody | None]:
    """The run's log entries that `ranges` name, by number."""
    log: dict[int, StoredBody | None] = {}
    for first, end in ranges:
        log.update(_log_span(conn, run_id, first, end))
    return log
