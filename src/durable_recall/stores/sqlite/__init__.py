"""The SQLite store: the embedded default (one file, several processes on one host).

`SqliteConnection` (with `SqliteTables`, `transaction`, and `chunked`/`marks` for `IN (...)`
lists) is public for the conversation store, which keeps its own tables in the same kind of file,
opened, migrated and queried the same way.
"""

from __future__ import annotations

from ._connection import STEP_TABLES, SqliteConnection, SqliteTables, transaction
from ._erase import scrub as scrub_file
from ._erase import secure_delete
from ._index import SqliteIndex
from ._params import chunked, marks
from ._store import SqliteStepStore

__all__ = (
    'STEP_TABLES',
    'SqliteConnection',
    'SqliteIndex',
    'SqliteStepStore',
    'SqliteTables',
    'chunked',
    'marks',
    'scrub_file',
    'secure_delete',
    'transaction',
)
