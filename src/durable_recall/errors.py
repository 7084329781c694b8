"""Every error durable-recall raises on purpose, and its warning class, in one place.

Each error derives from [`DurableRecallError`][durable_recall.errors.DurableRecallError], so
`except DurableRecallError` catches them all. The ones a retry cannot fix (a bad configuration, a
reused run id, store I/O in workflow code) also derive from pydantic-ai's `UserError`, which the
Temporal integration treats as non-retryable; `StoreUnavailableError` is a `ConnectionError`, which
a retry may fix.

The classes load on first use (PEP 562), from the layer that raises them: importing this module
loads neither pydantic-ai nor a driver, and `CorruptConversationError` loads with the conversation
stores (which need `pydantic-ai-slim>=2.68`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import (
        ConversationKeyErasedError,
        CorruptRunError,
        CorruptSnapshotError,
        DurableRecallDeprecationWarning,
        DurableRecallError,
        JournalPayloadError,
        PydanticAIVersionError,
        RunIdConflictError,
        SnapshotChainError,
        StoreConfigurationError,
        StoreUnavailableError,
        WorkflowCodeIOError,
    )
    from .conversations import CorruptConversationError

__all__ = (
    'ConversationKeyErasedError',
    'CorruptConversationError',
    'CorruptRunError',
    'CorruptSnapshotError',
    'DurableRecallDeprecationWarning',
    'DurableRecallError',
    'JournalPayloadError',
    'PydanticAIVersionError',
    'RunIdConflictError',
    'SnapshotChainError',
    'StoreConfigurationError',
    'StoreUnavailableError',
    'WorkflowCodeIOError',
)

_HOMES: dict[str, str] = {name: 'base' for name in __all__} | {'CorruptConversationError': 'conversations'}
"""The layer that defines each class (`tests/test_exports.py` checks the classes are those layers' own)."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    qualified = f'durable_recall.{home}'
    __import__(qualified)  # the import statement's hook, as the package's own `__getattr__` explains
    value = getattr(sys.modules[qualified], name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
