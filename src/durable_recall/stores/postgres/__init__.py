"""The PostgreSQL store: many workers on many hosts (psycopg 3, imported with this package)."""

from __future__ import annotations

from ._index import PostgresIndex
from ._store import PostgresStepStore

__all__ = (
    'PostgresIndex',
    'PostgresStepStore',
)
