"""Stores layer: where run records and step snapshots live, each store with its half of the index.

`memory/` for tests, `sqlite/` as the embedded default, `postgres/` for many workers on many
hosts. All share one layout (a per-run message log plus per-snapshot log ranges) and one behaviour
suite. Every store loads on first use, so importing this package (which Temporal's sandbox does
for every workflow run) loads no driver.

The records a store reads and writes are exported here too ([`RunRecord`][durable_recall.stores.RunRecord],
[`Snapshot`][durable_recall.stores.Snapshot], [`SnapshotDelta`][durable_recall.stores.SnapshotDelta], ...):
they are defined in the base layer, which every layer shares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import (
    PersistBatch,
    RunRecord,
    RunRegistration,
    Segment,
    Snapshot,
    SnapshotDelta,
    SnapshotState,
)
from ._cipher import JournalCipher
from ._erasure import (
    ErasableStore,
    Erased,
    IdleConversation,
    Pruned,
    ScrubReport,
    erase_conversation,
    erase_run,
    prune_idle,
)
from ._keys import ConversationKey, ConversationKeyStore, conversation_of
from ._pending import PendingMark, PendingMarks, pending_mark_problem
from ._protocol import BatchSaver, ConversationSummaries, ConversationSummary, LogBodies, StepStore
from ._summaries import summarize_conversations
from ._url import open_spec_store, open_store, redact_url

if TYPE_CHECKING:
    from .memory import InMemoryStepStore, MemoryIndex
    from .postgres import PostgresStepStore
    from .sqlite import SqliteStepStore

__all__ = (
    'BatchSaver',
    'ConversationKey',
    'ConversationKeyStore',
    'ConversationSummaries',
    'ConversationSummary',
    'ErasableStore',
    'Erased',
    'IdleConversation',
    'JournalCipher',
    'InMemoryStepStore',
    'LogBodies',
    'MemoryIndex',
    'PendingMark',
    'PendingMarks',
    'PersistBatch',
    'PostgresStepStore',
    'Pruned',
    'RunRecord',
    'RunRegistration',
    'ScrubReport',
    'Segment',
    'Snapshot',
    'SnapshotDelta',
    'SnapshotState',
    'SqliteStepStore',
    'StepStore',
    'conversation_of',
    'erase_conversation',
    'erase_run',
    'open_spec_store',
    'open_store',
    'pending_mark_problem',
    'prune_idle',
    'redact_url',
    'summarize_conversations',
)


def __getattr__(name: str) -> Any:
    # Every store loads on first use: a command that opens a SQLite file skips the memory store's
    # modules (~10 ms of a CLI start), and importing the package loads no driver.
    if name in ('InMemoryStepStore', 'MemoryIndex'):
        from . import memory

        return getattr(memory, name)
    if name == 'SqliteStepStore':
        from .sqlite import SqliteStepStore

        return SqliteStepStore
    if name == 'PostgresStepStore':
        from .postgres import PostgresStepStore

        return PostgresStepStore
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
