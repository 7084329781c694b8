"""The SQLite conversation store's tables, as the step store's `SqliteConnection` opens and migrates them.

One connection code serves both stores (`durable_recall.stores.sqlite`): a bad path fails in the
constructor and says why, the tables are created or migrated on first use under the file's write
lock, one connection is lent to one worker thread at a time, and SQLite's result codes become the
store's errors. What is the conversation store's own is which tables: the `drc_*` set, versioned in
`drc_meta` apart from the step store's `dr_*`, so both can share a file.
"""

from __future__ import annotations

from ...stores.sqlite import SqliteConnection, SqliteTables
from .._migrations import SQLITE_META, SQLITE_MIGRATIONS, check_version

__all__ = ('CONVERSATION_TABLES', 'connect')

CONVERSATION_TABLES = SqliteTables(
    meta_table='drc_meta',
    meta=SQLITE_META,
    migrations=SQLITE_MIGRATIONS,
    check_version=check_version,
    store='SQLite conversation store',
    version_name='conversation schema version',
)
"""The conversation store's tables (`drc_*`)."""


def connect(path: str, busy_timeout: float) -> SqliteConnection:
    """Open `path` for the conversation store's tables (see `SqliteConnection`).

    Raises:
        StoreConfigurationError: The file cannot be created or opened for writing, is not a
            SQLite database, or holds a conversation schema written by a newer durable-recall.
    """
    return SqliteConnection(path, busy_timeout, tables=CONVERSATION_TABLES)
