"""Base layer: the records every other layer passes around, their stored encoding, errors and warnings.

Imports nothing of durable-recall. Everything here is data or a pure function.
"""

from __future__ import annotations

from ._codec import MessageDecodeError, StoredBody, decode_body, dump_messages, encode_body, load_messages
from ._compat import CONVERSATION_STORE_PYDANTIC_AI, PydanticAIVersionError, require_conversation_store
from ._errors import (
    CorruptRunError,
    CorruptSnapshotError,
    DurableRecallError,
    RunIdConflictError,
    SnapshotChainError,
    StoreConfigurationError,
    StoreUnavailableError,
    WorkflowCodeIOError,
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
from ._time import format_timestamp, parse_timestamp
from ._warnings import DurableRecallDeprecationWarning

__all__ = (
    'CONVERSATION_STORE_PYDANTIC_AI',
    'MAX_RUN_ID_LENGTH',
    'CorruptRunError',
    'CorruptSnapshotError',
    'DurableRecallDeprecationWarning',
    'DurableRecallError',
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
    'load_messages',
    'parse_timestamp',
    'require_conversation_store',
)
