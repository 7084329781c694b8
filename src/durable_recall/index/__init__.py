"""The persistent, incremental search index kept beside the snapshots."""

from __future__ import annotations

from ._storage import IndexedRunRow, IndexStorage, PostingsRow, RunCommit, ScopeStatus, StaleIndexError

__all__ = ('IndexStorage', 'IndexedRunRow', 'PostingsRow', 'RunCommit', 'ScopeStatus', 'StaleIndexError')
