"""The SQLite conversation store's connection: opening the file, migrating, transactions, errors.

The same approach as the SQLite step store's connection (kept apart from it: the layers may not
import each other): the constructor opens the file so a bad path fails there and says why, tables
are created or migrated on first use, one connection is lent to one worker thread at a time, and
SQLite's result codes become the store's errors (retryable or not).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager, suppress
from typing import TypeVar

import anyio.to_thread

from ...base import StoreConfigurationError, StoreUnavailableError
from .._migrations import SCHEMA_VERSION, SQLITE_META, SQLITE_MIGRATIONS, check_version

__all__ = ('SqliteConnection', 'transaction')

_T = TypeVar('_T')
_R = TypeVar('_R')

# Primary SQLite result codes (the low byte of an extended code).
_RETRYABLE_CODES = frozenset({5, 6, 10, 13, 15})  # BUSY, LOCKED, IOERR, FULL, PROTOCOL
_CONFIGURATION_CODES = frozenset({3, 8, 14, 23, 26})  # PERM, READONLY, CANTOPEN, AUTH, NOTADB


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str) -> Generator[None]:
    """Run the block in one transaction: committed if it returns, rolled back if it raises."""
    conn.execute(begin)
    try:
        yield
    except BaseException:
        with suppress(sqlite3.Error):  # the original error says more
            conn.execute('ROLLBACK')
        raise
    try:
        conn.execute('COMMIT')
    except sqlite3.Error:
        if conn.in_transaction:
            conn.execute('ROLLBACK')
        raise


class SqliteConnection:
    """One connection to the store's file, lent to one worker thread at a time."""

    def __init__(self, path: str, busy_timeout: float) -> None:
        """Open the file and check its conversation schema version.

        Raises:
            StoreConfigurationError: The file cannot be created or opened for writing, is not a
                SQLite database, or holds a schema written by a newer durable-recall.
        """
        self.path = path
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._schema_ready = False
        self._conn: sqlite3.Connection | None = self._open()

    async def call(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `query` in a worker thread holding the connection."""
        return await anyio.to_thread.run_sync(self.locked, query)

    async def read(self, query: Callable[[sqlite3.Connection], _T], finish: Callable[[_T], _R]) -> _R:
        """Run `query` holding the connection, then `finish` on its result in the same thread, unlocked.

        Decoding messages is CPU work: another query need not wait for it.
        """
        return await anyio.to_thread.run_sync(lambda: finish(self.locked(query)))

    def locked(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run `query` in this thread holding the connection, with SQLite's errors translated."""
        with self._lock:
            try:
                return query(self._connection())
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
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise self._unusable(error) from error
        try:
            # Switching to WAL writes the file header, so an unwritable file fails here, not on a save.
            conn.execute('PRAGMA journal_mode = WAL').fetchone()
            self._schema_version(conn)
        except sqlite3.Error as error:
            conn.close()
            raise (self._translate(error) or self._unusable(error)) from error
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        if not self._schema_ready:
            self._migrate(self._conn)
            self._schema_ready = True
        return self._conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        if self._schema_version(conn) == SCHEMA_VERSION:
            return
        with transaction(conn, 'BEGIN IMMEDIATE'):
            conn.execute(SQLITE_META)
            version = self._schema_version(conn)  # read again under the write lock
            for statements in SQLITE_MIGRATIONS[version:]:
                for statement in statements:
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO drc_meta (key, value) VALUES ('schema_version', ?)"
                ' ON CONFLICT (key) DO UPDATE SET value = excluded.value',
                (str(SCHEMA_VERSION),),
            )

    def _schema_version(self, conn: sqlite3.Connection) -> int:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drc_meta'").fetchone() is None:
            return 0
        row = conn.execute("SELECT value FROM drc_meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            return 0
        try:
            version = int(row[0])
        except ValueError:
            raise StoreConfigurationError(
                f'SQLite database {self.path!r} records conversation schema version {row[0]!r}, which is not a '
                'number: the file was not written by durable-recall; point the store at another file.'
            ) from None
        check_version(version, f'SQLite database {self.path!r}')
        return version

    def _unusable(self, error: sqlite3.Error) -> StoreConfigurationError:
        return StoreConfigurationError(
            f'cannot use {self.path!r} as a SQLite conversation store ({error}): pass a path whose directory '
            'exists and is writable by this process, to a new file or an existing durable-recall database.'
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
