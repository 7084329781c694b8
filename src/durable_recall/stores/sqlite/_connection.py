"""The SQLite stores' connection: opening the file, migrating its tables, transactions, and errors.

Kept apart from the queries because this is where the file's awkward parts live: a bad path must
fail in the store's constructor and say why, tables are created or migrated on first use, one
connection is shared by worker threads one at a time, and SQLite's result codes must become the
store's errors (retryable or not).

The step store and the conversation store (`durable_recall.conversations`, a layer above) both
open their files through `SqliteConnection`; what differs between them is only which tables it
creates and migrates, described by a `SqliteTables` (`STEP_TABLES` for the step store's `dr_*`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, LiteralString, TypeVar

import anyio.to_thread

from ...base import StoreUnavailableError
from .._migrations import SQLITE_META, SQLITE_MIGRATIONS, check_version
from .._snapshot_sum import snapshot_checksum

if TYPE_CHECKING:
    from ...base import StoreConfigurationError

__all__ = ('STEP_TABLES', 'SqliteConnection', 'SqliteTables', 'reclaim_free_pages', 'transaction')

_T = TypeVar('_T')
_R = TypeVar('_R')

# Primary SQLite result codes (the low byte of an extended code).
_RETRYABLE_CODES = frozenset({5, 6, 10, 13, 15})  # BUSY, LOCKED, IOERR, FULL, PROTOCOL
_CONFIGURATION_CODES = frozenset({3, 8, 14, 23, 26})  # PERM, READONLY, CANTOPEN, AUTH, NOTADB


@dataclass(frozen=True)
class SqliteTables:
    """A set of tables versioned together in a SQLite file: what `SqliteConnection` creates and migrates.

    Two sets can share one file and upgrade independently, each recording its own version in its
    own meta table: the step store's (`STEP_TABLES`) and a conversation store's.
    """

    meta_table: str
    """The key/value table that records the set's `schema_version` (`dr_meta`)."""
    meta: LiteralString
    """The statement that creates `meta_table` if it is missing, before the version is read."""
    migrations: tuple[tuple[LiteralString, ...], ...]
    """Entry `n` moves the set from version `n` to `n + 1`: the version this release writes is their count."""
    check_version: Callable[[int, str], None]
    """Refuses a version newer than this release understands (given the version and where it was found)."""
    store: str = 'SQLite store'
    """What a file unusable for these tables is called in errors: 'cannot use ... as a <store>'."""
    version_name: str = 'schema version'
    """What the recorded version is called in errors."""

    @property
    def version(self) -> int:
        """The version this release writes and understands."""
        return len(self.migrations)


STEP_TABLES = SqliteTables(
    meta_table='dr_meta', meta=SQLITE_META, migrations=SQLITE_MIGRATIONS, check_version=check_version
)
"""The step store's tables (`dr_*`)."""


_INCREMENTAL = 2
"""`PRAGMA auto_vacuum`'s value for incremental: free pages can be given back to the file system."""


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str) -> Generator[None]:
    """Run the block in one transaction: committed if it returns, rolled back if it raises.

    A write (`BEGIN IMMEDIATE`) gives the pages it freed back before it commits (`reclaim_free_pages`).
    """
    conn.execute(begin)
    try:
        yield
        if begin == 'BEGIN IMMEDIATE':
            reclaim_free_pages(conn)
    except BaseException:
        # The original error says more; SQLite has already rolled back if it cannot.
        with suppress(sqlite3.Error):
            conn.execute('ROLLBACK')
        raise
    try:
        conn.execute('COMMIT')
    except sqlite3.Error:
        if conn.in_transaction:
            conn.execute('ROLLBACK')
        raise


def reclaim_free_pages(conn: sqlite3.Connection) -> int:
    """Move the file's free pages to its end and cut them off, in the caller's write transaction; how many.

    A file durable-recall creates is in incremental auto-vacuum mode (`SqliteConnection`), so the
    pages that a write leaves empty (a deleted conversation, postings rows rewritten longer, the
    pending list emptied by a catch-up) are given back to the file system when that write commits,
    instead of staying in the file until a later write reuses them or someone runs `VACUUM`. The
    check is the file header's free-page count (microseconds); only a write that freed pages moves
    any. A file created in another mode (by an earlier release, or by hand) keeps its free pages,
    as SQLite does.
    """
    free = conn.execute('PRAGMA freelist_count').fetchone()[0]
    if not free or conn.execute('PRAGMA auto_vacuum').fetchone()[0] != _INCREMENTAL:
        return 0
    # Python's sqlite3 steps a PRAGMA that returns no columns once, and each step of
    # `incremental_vacuum` moves one page: one statement per page.
    for _ in range(free):
        conn.execute('PRAGMA incremental_vacuum(1)')
    return free


def _same(found: _T) -> _T:
    return found


class SqliteConnection:
    """One connection to the store's file, lent to one worker thread at a time.

    Opened by the constructor, so that a bad path fails there; the tables are created or migrated
    when the connection is first lent.
    """

    def __init__(self, path: str, busy_timeout: float, *, tables: SqliteTables = STEP_TABLES) -> None:
        """Open the file and check the version of `tables` recorded in it.

        Args:
            path: The database file.
            busy_timeout: Seconds a write waits for another process's write lock.
            tables: The tables this connection creates and migrates on first use.

        Raises:
            StoreConfigurationError: The file cannot be created or opened for writing, is not a
                SQLite database, or holds a schema written by a newer durable-recall.
        """
        self.path = path
        self.busy_timeout = busy_timeout
        self.tables = tables
        self._lock = threading.Lock()
        self._schema_ready = False
        self._conn: sqlite3.Connection | None = self._open()

    async def call(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `query` in a worker thread holding the connection."""
        return await anyio.to_thread.run_sync(self.locked, query)

    async def read(self, query: Callable[[sqlite3.Connection], _T], finish: Callable[[_T], _R]) -> _R:
        """Run `query` in a worker thread holding the connection, then `finish` on its result.

        `finish` (decoding messages, which is CPU work) runs in the same thread after the
        connection is released, so another query need not wait for it.
        """
        return await anyio.to_thread.run_sync(lambda: finish(self.locked(query)))

    async def lookup(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """`lookup_read` without a decoding step."""
        return await self.lookup_read(query, _same)

    async def lookup_read(self, query: Callable[[sqlite3.Connection], _T], finish: Callable[[_T], _R]) -> _R:
        """Run a point read (`query`, then `finish` on its result) in the caller's thread when it can, else in a worker.

        A search makes a dozen or more reads of a few rows each, looked up by key (the scope's
        status, a word's postings, the rows of the runs and messages it shows), each done in tens
        of microseconds; handing each to a worker thread and back costs more than the read (50 to
        100 us a hop on an idle two-core machine, far more when other processes hold the cores),
        which made the hops a third of a cold search and a quarter of a warm one. So such a read
        runs inline when the connection is open, migrated and free: in WAL mode a read never waits
        for a writer, and `finish` (decoding) is CPU work that holds the GIL in a worker too. When
        another thread holds the connection, or it still has to be opened or migrated (which can
        wait on another process's write lock), the read goes to a worker thread as `read` does.
        Writes and scans never come here.
        """
        if self._lock.acquire(blocking=False):
            try:
                # Read under the lock: a `close` in another thread may have run since the check.
                conn = self._conn if self._conn is not None and self._ready_inline(self._conn) else None
                found = None if conn is None else (self._translated(query, conn),)
            finally:
                self._lock.release()
            if found is not None:
                return finish(found[0])
        return await self.read(query, finish)

    def _ready_inline(self, conn: sqlite3.Connection) -> bool:
        """Whether the open connection's tables are ready, checking their version here the first time.

        The check is a read of a row or two: a file already at this release's version (nearly every
        file a process opens) is found ready without a worker thread, so a fresh process's first
        search starts none. A file to migrate is left to the worker (`_connection`), which may wait
        on another process's write lock; a newer version is refused here as there. Call with `_lock` held.
        """
        if not self._schema_ready:
            self._schema_ready = self._translated(self._schema_version, conn) == self.tables.version
        return self._schema_ready

    def locked(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `query` in this thread holding the connection, with SQLite's errors translated."""
        with self._lock:
            return self._translated(query, self._connection())

    def _translated(self, query: Callable[[sqlite3.Connection], _T], conn: sqlite3.Connection) -> _T:
        try:
            return query(conn)
        except sqlite3.Error as error:
            translated = self._translate(error)
            if translated is None:
                raise
            raise translated from error

    async def close(self) -> None:
        """Close the connection; the next query opens a new one."""

        def close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                    self._schema_ready = False

        await anyio.to_thread.run_sync(close)

    def _open(self) -> sqlite3.Connection:
        """Connect, switch to WAL and check the schema version, so a bad file fails right here."""
        try:
            _create_private(self.path)
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise self._unusable(error) from error
        try:
            if conn.execute('SELECT 1 FROM sqlite_master LIMIT 1').fetchone() is None:
                # A new (or empty) file: a mode SQLite fixes when the first table is created.
                conn.execute('PRAGMA auto_vacuum = INCREMENTAL')
            # Switching to WAL writes the file header, so an unwritable file fails here, not on a save.
            conn.execute('PRAGMA journal_mode = WAL').fetchone()
            # A deleted cell's bytes are zeroed in its page (no extra I/O); erasure turns it fully on (`_erase`).
            conn.execute('PRAGMA secure_delete = FAST')
            conn.create_function('dr_snapshot_checksum', 5, snapshot_checksum, deterministic=True)  # schema 14
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
        tables = self.tables
        if self._schema_version(conn) == tables.version:
            return
        with transaction(conn, 'BEGIN IMMEDIATE'):
            conn.execute(tables.meta)
            version = self._schema_version(conn)  # read again under the write lock
            for target, statements in enumerate(tables.migrations[version:], start=version + 1):
                for statement in statements:
                    try:
                        conn.execute(statement)
                    except sqlite3.IntegrityError as error:
                        raise self._not_upgradable(version, target, error) from error
            conn.execute(
                f"INSERT INTO {tables.meta_table} (key, value) VALUES ('schema_version', ?)"
                ' ON CONFLICT (key) DO UPDATE SET value = excluded.value',
                (str(tables.version),),
            )

    def _schema_version(self, conn: sqlite3.Connection) -> int:
        meta = self.tables.meta_table
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (meta,)).fetchone() is None:
            return 0
        row = conn.execute(f"SELECT value FROM {meta} WHERE key = 'schema_version'").fetchone()
        if row is None:
            return 0
        try:
            version = int(row[0])
        except ValueError:
            from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

            raise StoreConfigurationError(
                f'SQLite database {self.path!r} records {self.tables.version_name} {row[0]!r}, which is not a '
                'number: the file was not written by durable-recall; point the store at another file.'
            ) from None
        self.tables.check_version(version, f'SQLite database {self.path!r}')
        return version

    def _not_upgradable(self, version: int, target: int, error: sqlite3.Error) -> StoreConfigurationError:
        """A migration refused a stored row (a constraint of the new tables); the whole upgrade rolls back."""
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        return StoreConfigurationError(
            f'SQLite database {self.path!r} cannot be upgraded from {self.tables.version_name} {version} to '
            f'{target}: a stored row does not fit the new tables ({error}), which happens when rows have '
            'been damaged or edited by hand (for example a message row naming a run that has no run row). '
            'The file is left as it was: repair or delete those rows with the release that wrote it '
            '(`durable-recall check` names damaged rows), then open it again.'
        )

    def _unusable(self, error: sqlite3.Error) -> StoreConfigurationError:
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        return StoreConfigurationError(
            f'cannot use {self.path!r} as a {self.tables.store} ({error}): pass a path whose directory exists '
            'and is writable by this process, to a new file or an existing durable-recall database.'
        )

    def _translate(self, error: sqlite3.Error) -> Exception | None:
        code = getattr(error, 'sqlite_errorcode', None)
        if code is None:
            return None
        if code & 0xFF in _RETRYABLE_CODES:
            return StoreUnavailableError(
                f'SQLite database {self.path!r} is unavailable ({error}); another process may have held its '
                f'write lock for over {self.busy_timeout}s, or the disk is full or failing. Retry, or raise '
                '`busy_timeout`.'
            )
        if code & 0xFF in _CONFIGURATION_CODES:
            return self._unusable(error)
        return None


def _create_private(path: str) -> None:
    """Create the database file readable and writable by its owner only (0600), if it does not exist.

    The store holds every message of every conversation; under the usual umask 022 SQLite would
    create it 0644, readable by every local user. SQLite gives the `-wal` and `-shm` files it
    creates the database file's mode, so they are 0600 too. An existing file's mode is left alone.

    Raises:
        sqlite3.OperationalError: The file cannot be created (reported as SQLite would).
    """
    if path == ':memory:' or path.startswith('file:') or not path:
        return
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as error:
        raise sqlite3.OperationalError(f'unable to open database file ({error.strerror})') from error
    os.close(descriptor)
