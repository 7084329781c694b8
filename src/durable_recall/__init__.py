"""durable-recall: exact recall over everything a Pydantic AI agent persisted, built for durable engines.

Data path: an agent step ([`StepPersistence`][durable_recall.StepPersistence]) -> a durable
operation -> a store ([`SqliteStepStore`][durable_recall.SqliteStepStore],
[`PostgresStepStore`][durable_recall.PostgresStepStore]) -> ... -> the search tool.

The public names load on first use (PEP 562): `import durable_recall` runs none of the layers, so
the `durable-recall` command answers `--help` without loading pydantic-ai (most of its start-up
time), and a store's driver loads only with that store. `from durable_recall import X` and
`durable_recall.X` work as if every name were imported here; type checkers read the imports
under `TYPE_CHECKING`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

__version__ = '0.2.0'
"""This release's version (the package metadata's, which `pyproject.toml` reads from here)."""

if TYPE_CHECKING:
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
    from .compaction import SlidingWindowCompaction, ToolResultClearing
    from .conversations import (
        ConversationSaved,
        ConversationStoreSource,
        CorruptConversationError,
        DurableConversationStore,
        PostgresConversationStore,
        SqliteConversationStore,
        idempotent_save,
    )
    from .history import HistorySource, RunHistory
    from .index import update_index
    from .persistence import StepPersistence
    from .search import ConversationSearch, SearchScope, SnapshotHistorySource
    from .stores import InMemoryStepStore, PostgresStepStore, SqliteStepStore, StepStore, open_store

__all__ = (
    'ConversationSaved',
    'ConversationSearch',
    'ConversationStoreSource',
    'CorruptConversationError',
    'CorruptRunError',
    'CorruptSnapshotError',
    'DurableConversationStore',
    'DurableRecallDeprecationWarning',
    'DurableRecallError',
    'HistorySource',
    'InMemoryStepStore',
    'PersistBatch',
    'PostgresConversationStore',
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
    'SqliteConversationStore',
    'SqliteStepStore',
    'StepPersistence',
    'StepStore',
    'StoreConfigurationError',
    'StoreUnavailableError',
    'ToolResultClearing',
    'WorkflowCodeIOError',
    'idempotent_save',
    'open_store',
    'update_index',
)

_EXPORTS: dict[str, tuple[str, ...]] = {
    'base': (
        'CorruptRunError',
        'CorruptSnapshotError',
        'DurableRecallDeprecationWarning',
        'DurableRecallError',
        'PersistBatch',
        'RunIdConflictError',
        'RunRecord',
        'RunRegistration',
        'Segment',
        'Snapshot',
        'SnapshotChainError',
        'SnapshotDelta',
        'SnapshotState',
        'StoreConfigurationError',
        'StoreUnavailableError',
        'WorkflowCodeIOError',
    ),
    'compaction': ('SlidingWindowCompaction', 'ToolResultClearing'),
    'conversations': (
        'ConversationSaved',
        'ConversationStoreSource',
        'CorruptConversationError',
        'DurableConversationStore',
        'PostgresConversationStore',
        'SqliteConversationStore',
        'idempotent_save',
    ),
    'history': ('HistorySource', 'RunHistory'),
    'index': ('update_index',),
    'persistence': ('StepPersistence',),
    'search': ('ConversationSearch', 'SearchScope', 'SnapshotHistorySource'),
    'stores': ('InMemoryStepStore', 'PostgresStepStore', 'SqliteStepStore', 'StepStore', 'open_store'),
}
"""Each public name under the layer that defines it (`tests/test_exports.py` checks it against `__all__`)."""

_HOMES: dict[str, str] = {name: layer for layer, names in _EXPORTS.items() for name in names}

_LAYERS = frozenset({*_EXPORTS, 'text'})
"""The layers an eager import of this package used to load, so `durable_recall.search` and the like still resolve."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name) or (name if name in _LAYERS else None)
    if home is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    qualified = f'{__name__}.{home}'
    # `__import__`, the hook an import statement calls: Temporal's workflow sandbox replaces it to
    # hand workflow code the worker process's own modules when durable_recall is passed through
    # (`importlib.import_module` would bypass that and re-execute the layer inside the sandbox).
    __import__(qualified)
    layer = sys.modules[qualified]
    value = layer if home == name else getattr(layer, name)
    globals()[name] = value  # the next lookup finds the name without calling this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_LAYERS})
