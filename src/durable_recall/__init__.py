"""durable-recall: exact recall over everything a Pydantic AI agent persisted, built for durable engines.

Data path: an agent step ([`StepPersistence`][durable_recall.StepPersistence]) -> a durable
operation -> a store ([`SqliteStepStore`][durable_recall.SqliteStepStore],
[`PostgresStepStore`][durable_recall.PostgresStepStore]) -> ... -> the search tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import (
    CorruptSnapshotError,
    DurableRecallError,
    RunIdConflictError,
    SnapshotChainError,
    StoreConfigurationError,
    StoreUnavailableError,
    WorkflowCodeIOError,
)
from ._records import PersistBatch, RunRecord, RunRegistration, Segment, Snapshot, SnapshotDelta, SnapshotState
from ._warnings import DurableRecallDeprecationWarning
from .compaction import SlidingWindowCompaction
from .history import HistorySource, RunHistory, SnapshotHistorySource
from .persistence import StepPersistence
from .search import ConversationSearch, SearchScope  # isort: split

from .index import update_index
from .stores import InMemoryStepStore, StepStore

if TYPE_CHECKING:
    from .stores import PostgresStepStore, SqliteStepStore, open_store

__all__ = (
    'ConversationSearch',
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

_LAZY = {'SqliteStepStore', 'PostgresStepStore', 'open_store'}


def __getattr__(name: str) -> Any:
    # The SQLite and Postgres stores load on first use, so importing the package (which
    # Temporal's sandbox does for every workflow run) pulls in no driver.
    if name in _LAZY:
        from . import stores

        return getattr(stores, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
