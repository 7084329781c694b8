"""durable-recall: exact recall over everything a Pydantic AI agent persisted, built for durable engines.

Data path: an agent step ([`StepPersistence`][durable_recall.persistence.StepPersistence]) -> a durable
operation -> a store ([`SqliteStepStore`][durable_recall.stores.SqliteStepStore],
[`PostgresStepStore`][durable_recall.stores.PostgresStepStore]) -> ... -> the search tool.

The public names load on first use (PEP 562): `import durable_recall` runs none of the layers, so
the `durable-recall` command answers `--help` without loading pydantic-ai (most of its start-up
time), and a store's driver loads only with that store. `from durable_recall import X` and
`durable_recall.X` work as if every name were imported here; type checkers read the imports
under `TYPE_CHECKING`.

The top level holds what an application builds an agent from: the capabilities, the stores and
[`open_store`][durable_recall.stores.open_store], the conversation stores, the history sources and the
base error. The records a store reads and writes (`RunRecord`, `Snapshot`, `SnapshotDelta`, ...)
live in [`durable_recall.stores`][durable_recall.stores], the errors and the warning class in
[`durable_recall.errors`][durable_recall.errors]. The names this package exported before 0.2.0
still resolve here, each with a `DurableRecallDeprecationWarning` naming its new home.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any

__version__ = '0.2.0'
"""This release's version (the package metadata's, which `pyproject.toml` reads from here)."""

if TYPE_CHECKING:
    from .base import DurableRecallError
    from .compaction import SlidingWindowCompaction, ToolResultClearing
    from .conversations import ConversationStoreSource, PostgresConversationStore, SqliteConversationStore
    from .history import HistorySource
    from .persistence import StepPersistence
    from .search import AutoRecall, ConversationSearch, SnapshotHistorySource, update_index
    from .stores import InMemoryStepStore, PostgresStepStore, SqliteStepStore, StepStore, open_store

__all__ = (
    'AutoRecall',
    'ConversationSearch',
    'ConversationStoreSource',
    'DurableRecallError',
    'HistorySource',
    'InMemoryStepStore',
    'PostgresConversationStore',
    'PostgresStepStore',
    'SlidingWindowCompaction',
    'SnapshotHistorySource',
    'SqliteConversationStore',
    'SqliteStepStore',
    'StepPersistence',
    'StepStore',
    'ToolResultClearing',
    'open_store',
    'update_index',
)

_EXPORTS: dict[str, tuple[str, ...]] = {
    'base': ('DurableRecallError',),
    'compaction': ('SlidingWindowCompaction', 'ToolResultClearing'),
    'conversations': ('ConversationStoreSource', 'PostgresConversationStore', 'SqliteConversationStore'),
    'history': ('HistorySource',),
    'persistence': ('StepPersistence',),
    'search': ('AutoRecall', 'ConversationSearch', 'SnapshotHistorySource', 'update_index'),
    'stores': ('InMemoryStepStore', 'PostgresStepStore', 'SqliteStepStore', 'StepStore', 'open_store'),
}
"""Each public name under the layer that defines it (`tests/test_exports.py` checks it against `__all__`)."""

_HOMES: dict[str, str] = {name: layer for layer, names in _EXPORTS.items() for name in names}

_MOVED: dict[str, str] = {
    **dict.fromkeys(
        ('PersistBatch', 'RunRecord', 'RunRegistration', 'Segment', 'Snapshot', 'SnapshotDelta', 'SnapshotState'),
        'stores',
    ),
    **dict.fromkeys(
        (
            'CorruptConversationError',
            'CorruptRunError',
            'CorruptSnapshotError',
            'DurableRecallDeprecationWarning',
            'RunIdConflictError',
            'SnapshotChainError',
            'StoreConfigurationError',
            'StoreUnavailableError',
            'WorkflowCodeIOError',
        ),
        'errors',
    ),
    **dict.fromkeys(('ConversationSaved', 'DurableConversationStore', 'idempotent_save'), 'conversations'),
    'RunHistory': 'history',
    'SearchScope': 'search',
}
"""Names this package exported before 0.2.0, each with its module now: they still resolve, with a warning."""

_LAYERS = frozenset({*_EXPORTS, 'index', 'text', 'errors'})
"""The modules an eager import of this package used to load (and `errors`), so `durable_recall.search` resolves."""


def _load(module: str) -> Any:
    qualified = f'{__name__}.{module}'
    # `__import__`, the hook an import statement calls: Temporal's workflow sandbox replaces it to
    # hand workflow code the worker process's own modules when durable_recall is passed through
    # (`importlib.import_module` would bypass that and re-execute the layer inside the sandbox).
    __import__(qualified)
    return sys.modules[qualified]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name) or (name if name in _LAYERS else None)
    if home is None:
        moved = _MOVED.get(name)
        if moved is None:
            raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
        from .base import DurableRecallDeprecationWarning

        warnings.warn(
            f'`durable_recall.{name}` moved to `durable_recall.{moved}.{name}`; import it from there '
            f'(the top-level name goes away in a later release)',
            DurableRecallDeprecationWarning,
            stacklevel=2,
        )
        return getattr(_load(moved), name)  # not cached: every use of the old name warns
    layer = _load(home)
    value = layer if home == name else getattr(layer, name)
    globals()[name] = value  # the next lookup finds the name without calling this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_LAYERS})
