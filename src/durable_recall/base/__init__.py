"""Base layer: the records every other layer passes around, their stored encoding, errors and warnings.

Imports nothing of durable-recall. Everything here is data or a pure function. Nor, on import,
pydantic-ai (most of a second to load): the errors deriving from its `UserError` load on first
use, and the message codec imports pydantic-ai's adapter when it first encodes or decodes one, so
a command that only reads a store's rows never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._codec import (
    MessageDecodeError,
    StoredBody,
    decode_body,
    dump_messages,
    encode_body,
    load_messages,
    plain_messages,
    warm_codec,
)
from ._compat import CONVERSATION_STORE_PYDANTIC_AI, PydanticAIVersionError, require_conversation_store
from ._plain_errors import (
    ConversationKeyErasedError,
    CorruptRunError,
    CorruptSnapshotError,
    DurableRecallError,
    JournalPayloadError,
    StoreUnavailableError,
)
from ._records import (
    MAX_RUN_ID_LENGTH,
    PersistBatch,
    RunRecord,
    RunRegistration,
    Segment,
    Snapshot,
    SnapshotDelta,
    SnapshotState,
)
from ._time import format_timestamp, from_micros, parse_timestamp, stored_time, to_micros
from ._warnings import DurableRecallDeprecationWarning

if TYPE_CHECKING:
    from ._errors import RunIdConflictError, SnapshotChainError, StoreConfigurationError, WorkflowCodeIOError

_USER_ERRORS = frozenset(('RunIdConflictError', 'SnapshotChainError', 'StoreConfigurationError', 'WorkflowCodeIOError'))
"""The errors deriving from pydantic-ai's `UserError`: loaded with pydantic-ai, on first use (see `_errors`)."""


def __getattr__(name: str) -> Any:
    """The `UserError` errors, imported with pydantic-ai when first asked for (PEP 562)."""
    if name in _USER_ERRORS:
        from . import _errors

        return getattr(_errors, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


__all__ = (
    'CONVERSATION_STORE_PYDANTIC_AI',
    'MAX_RUN_ID_LENGTH',
    'ConversationKeyErasedError',
    'CorruptRunError',
    'CorruptSnapshotError',
    'DurableRecallDeprecationWarning',
    'DurableRecallError',
    'JournalPayloadError',
    'MessageDecodeError',
    'PersistBatch',
    'PydanticAIVersionError',
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
    'StoredBody',
    'WorkflowCodeIOError',
    'decode_body',
    'dump_messages',
    'encode_body',
    'format_timestamp',
    'from_micros',
    'load_messages',
    'plain_messages',
    'parse_timestamp',
    'require_conversation_store',
    'stored_time',
    'to_micros',
    'warm_codec',
)
