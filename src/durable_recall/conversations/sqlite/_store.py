"""`SqliteConversationStore`: pydantic-ai's `ConversationStore` on one SQLite file."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...base import StoreConfigurationError
from ...stores import ScrubReport
from ...stores.sqlite import scrub_file, secure_delete
from .._api import ConversationEntry, ConversationRecord, ConversationStore
from .._reads import check_details, check_limit, decode_history, decode_records
from . import _queries
from ._entry_log import SqliteEntryLog
from ._tables import connect

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationDetails

__all__ = ('SqliteConversationStore',)


class SqliteConversationStore(ConversationStore):
    """Keeps pydantic-ai conversations in one SQLite file, in WAL mode, beside the step store if you like.

    pydantic-ai's `ConversationStore` does load, save, branch, fork, update and delete over the five
    storage primitives this class implements, plus `write_details` (a conversation's title and
    metadata, pydantic-ai-slim>=2.78), and `read_history`, overridden to read a history up to any
    entry (or its last `limit` entries) in one recursive query instead of one query per message.

    Several processes on one host may share the file. Every write is one `BEGIN IMMEDIATE`
    transaction that reads the stored revision and writes the record and its new entries under the
    file's write lock, so of two processes saving one conversation from the same revision exactly
    one succeeds; the other raises `ConversationConflict` and stores nothing. Do not put the file on
    a network filesystem: WAL needs shared memory.

    `delete` removes the record and every entry of its history and branches that no remaining
    record (a fork, say) reaches: the write lock makes that safe against concurrent saves and forks.

    The tables (`drc_*`) are versioned apart from the step store's (`dr_*`), so
    `SqliteConversationStore(database=path)` and `SqliteStepStore(database=path)` can share a file.
    `ConversationStoreSource` over this store searches a persistent index kept in the same file
    (`drc_index_*` tables), caught up from the entry log, so a cold process does not re-read
    unchanged conversations; `delete` removes the conversation from it too.
    """

    def __init__(self, database: str | os.PathLike[str] = 'durable-recall.db', *, busy_timeout: float = 30.0) -> None:
        """Open (creating if needed) the database file.

        Args:
            database: The SQLite file; its directory must exist and be writable.
            busy_timeout: Seconds a write waits for another process's write lock before it raises
                [`StoreUnavailableError`][durable_recall.errors.StoreUnavailableError].

        Raises:
            StoreConfigurationError: `database` is not a path, the file cannot be created or opened
                for writing, is not a SQLite database, or holds a schema from a newer durable-recall;
                or `busy_timeout` is not a non-negative number.
        """
        if not isinstance(database, str | os.PathLike):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreConfigurationError(f'SqliteConversationStore: database must be a path, got {database!r}')
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, int | float) or not busy_timeout >= 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreConfigurationError(
                f'SqliteConversationStore: busy_timeout must be a number of seconds >= 0, got {busy_timeout!r}'
            )
        self._path = os.fspath(database)
        self._db = connect(self._path, float(busy_timeout))

    def __repr__(self) -> str:
        return f'SqliteConversationStore({self._path!r})'

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation's record with its branches, or `None`."""
        found = await self._db.read(
            lambda conn: _queries.record_rows(conn, conversation_id), lambda rows: decode_records(rows)
        )
        return found[0] if found else None

    async def read_records(self, *, scope: str | None = None, limit: int | None = None) -> Sequence[ConversationRecord]:
        """The records, or those in `scope`, most recently saved first, at most `limit`."""
        check_limit(limit)
        return await self._db.read(
            lambda conn: _queries.record_rows(conn, None, scope=scope, limit=limit), lambda rows: decode_records(rows)
        )

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Store the record and its new entries in one transaction, checking the revision under the write lock."""
        await self._db.call(lambda conn: _queries.write_record(conn, record, new_entries, expected_revision))

    async def write_details(
        self,
        conversation_id: str,
        details: ConversationDetails,
        *,
        expected_revision: str,
        expected: ConversationDetails | None = None,
    ) -> ConversationRecord:
        """Write the title or metadata (only the keys given) if the record has `expected_revision` and `expected`.

        One `UPDATE ... WHERE` under the file's write lock: the check and the write are one step, so
        two processes setting a title `expected` to be unset cannot both succeed. The revision and
        `updated_at` stay as they are; a save never writes these columns back.

        Raises:
            ConversationConflict: No record with `expected_revision` and the `expected` values is stored.
            NotImplementedError: A key other than `title` and `metadata`, or a pydantic-ai whose
                `ConversationRecord` has no title (before 2.78).
            UserError: A title that is not a string, or metadata that is not a JSON object.
        """
        check_details(type(self).__name__)
        found = await self._db.read(
            lambda conn: _queries.write_details(conn, conversation_id, details, expected_revision, expected),
            lambda found: decode_records([found]),
        )
        return found[0]

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete the record and the entries no remaining record reaches, in one transaction, zeroing their bytes."""

        def delete(conn: sqlite3.Connection) -> None:
            with secure_delete(conn):
                _queries.delete_record(conn, conversation_id, expected_revision)

        await self._db.call(delete)

    async def scrub(self) -> ScrubReport:
        """Leave no deleted byte in the file or its write-ahead log (see docs/erasure.md)."""
        return await self._db.call(scrub_file)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """One entry.

        Raises:
            KeyError: The store has no entry with this id.
        """

        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return _queries.history_rows(conn, entry_id, 1)

        return (await self._db.read(read, lambda rows: decode_history(entry_id, rows, 1)))[0]

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        """The entries from the first up to `head_id`, or its last `limit`, in one query.

        Raises:
            KeyError: `head_id` or an entry before it is missing (a concurrent delete released it).
        """
        check_limit(limit)
        if head_id is None or limit == 0:
            return []

        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return _queries.history_rows(conn, head_id, limit)

        return await self._db.read(read, lambda rows: decode_history(head_id, rows, limit))

    def entry_log(self) -> SqliteEntryLog:
        """The entry log and index bookkeeping the persistent search index reads (see `ConversationStoreSource`)."""
        return SqliteEntryLog(self._db)

    async def aclose(self) -> None:
        """Close the connection; a later call on the store opens a new one."""
        await self._db.close()
