"""The PostgreSQL store: many workers on many hosts (psycopg 3, imported with this package).

`PostgresConnector` (with `PostgresTables`) is public for the conversation store, which keeps its
own tables in the same kind of schema, reached and migrated the same way.
"""

from __future__ import annotations

from ._connect import AsyncConnectionPoolLike, PostgresConnector
from ._erase import scrub as scrub_tables
from ._index import PostgresIndex
from ._store import PostgresStepStore
from ._tables import STEP_TABLES, PostgresTables

__all__ = (
    'STEP_TABLES',
    'AsyncConnectionPoolLike',
    'PostgresConnector',
    'PostgresIndex',
    'PostgresStepStore',
    'PostgresTables',
    'scrub_tables',
)
