"""Stores: where run records and step snapshots live.

`InMemoryStepStore` for tests, `SqliteStepStore` as the embedded default, `PostgresStepStore`
for many workers on many hosts. All share one layout (a per-run message log plus per-snapshot
log ranges) and one behaviour suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._memory import InMemoryStepStore
from ._protocol import StepStore

if TYPE_CHECKING:
    from ._postgres import PostgresStepStore
    from ._sqlite import SqliteStepStore
    from ._url import open_store

__all__ = ('InMemoryStepStore', 'PostgresStepStore', 'SqliteStepStore', 'StepStore', 'open_store')


def __getattr__(name: str) -> Any:
    if name == 'SqliteStepStore':
        from ._sqlite import SqliteStepStore

        return SqliteStepStore
    if name == 'PostgresStepStore':
        from ._postgres import PostgresStepStore

        return PostgresStepStore
    if name == 'open_store':
        from ._url import open_store

        return open_store
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
