"""The SQLite store: the embedded default (one file, several processes on one host)."""

from __future__ import annotations

from ._index import SqliteIndex
from ._store import SqliteStepStore

__all__ = (
    'SqliteIndex',
    'SqliteStepStore',
)
