"""durable-recall: exact recall over everything a Pydantic AI agent persisted, built for durable engines.

Data path: an agent step ([`StepPersistence`][durable_recall.StepPersistence]) -> a durable
operation -> a store ([`SqliteStepStore`][durable_recall.SqliteStepStore],
[`PostgresStepStore`][durable_recall.PostgresStepStore]) -> ... -> the search tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    CorruptRunError,
    CorruptSnapshotError,
    DurableRecallDeprecationWarning,
    DurableRecallError,
    PersistBatch,
    RunIdConflictError,
    RunRecord,
    RunRegistration,
    Segment,
    Snapshot,
    SnapshotChainError,
    SnapshotDelta,
    SnapshotState,
    StoreConfigurationError,
    StoreUnavailableError,
    WorkflowCodeIOError,
)
from .compaction import SlidingWindowCompaction
from .history import HistorySource, RunHistory
from .index import update_index
from .persistence import StepPersistence
from .search import ConversationSearch, SearchScope, SnapshotHistorySource
from .stores import InMemoryStepStore, StepStore, open_store

if TYPE_CHECKING:
    from .stores import PostgresStepStore, SqliteStepStore

__all__ = (
    'ConversationSearch',
    'CorruptRunError',
    'CorruptSnapshotError',
    'DurableRecallDeprecationWarning',
    'DurableRecallError',
    'HistorySource',
    'InMemoryStepStore',
    'PersistBatch',
    'PostgresStepStore',
    'RunIdConflictError',
    'RunRecord',
    'RunHistory',
    'RunRegistration',
    'SearchScope',
    'Segment',
    'SlidingWindowCompaction',
    'SnapshotHistorySource',
    'Snapshot',
    'SnapshotChainError',
    'SnapshotDelta',
    'SnapshotState',
    'SqliteStepStore',
    'StepPersistence',
    'StepStore',
    'StoreConfigurationError',
    'StoreUnavailableError',
    'WorkflowCodeIOError',
    'open_store',
    'update_index',
)

_LAZY = {'SqliteStepStore', 'PostgresStepStore'}


def __getattr__(name: str) -> Any:
    # The SQLite and Postgres stores load on first use, so importing the package (which
    # Temporal's sandbox does for every workflow run) pulls in no driver.
    if name in _LAZY:
        from . import stores

        return getattr(stores, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
