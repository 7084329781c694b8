"""The persistent, incremental search index kept beside the snapshots.

`update_index` is imported lazily: the stores import this package's storage types, and the
indexer imports the history and search packages, which import the stores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._storage import IndexedRunRow, IndexStorage, PostingsRow, RunCommit, ScopeStatus, StaleIndexError

if TYPE_CHECKING:
    from ._indexer import update_index

__all__ = (
    'IndexStorage',
    'IndexedRunRow',
    'PostingsRow',
    'RunCommit',
    'ScopeStatus',
    'StaleIndexError',
    'update_index',
)


def __getattr__(name: str) -> Any:
    if name == 'update_index':
        from ._indexer import update_index

        return update_index
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
