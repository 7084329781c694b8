"""The in-process store, and the in-memory index port (the reference semantics of the SQL ones)."""

from __future__ import annotations

from ._index import MemoryIndex
from ._store import InMemoryStepStore

__all__ = ('InMemoryStepStore', 'MemoryIndex')
