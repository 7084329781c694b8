"""Conversations layer: pydantic-ai's `ConversationStore` on SQLite and Postgres, and searching any one.

pydantic-ai keeps a conversation whole (`Conversation`: messages, usage, deferred tool requests,
revision) and stores it through a `ConversationStore`, whose base class does load, save, branch,
fork and delete over five storage primitives. Core ships only an in-memory store; this package
adds durable ones (`SqliteConversationStore`, `PostgresConversationStore`) that can share a database
with the step store, and `ConversationStoreSource`, which lets `ConversationSearch` recall what any
conversation store holds, including what `limit` loads stopped sending long ago. Over our SQL
stores the search reads a persistent index kept in the store's own database (`EntryLog`: what it
reads of the entry log), caught up from the entries saved since it was last indexed.

For workflow code: `idempotent_save` (a save a retry recognises as its own) and
`DurableConversationStore`, the engine-free base of `durable_recall.temporal.TemporalConversationStore`
and `durable_recall.dbos.DBOSConversationStore`, whose `load`, `save` and `update` run as activities or
steps.

The Postgres store loads on first use, so importing this package (which Temporal's sandbox does for
every workflow run) loads no driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import warm_codec
from ._api import ConversationEntry, ConversationRecord
from ._durable import (
    DurableConversationStore,
    LoadConversation,
    LoadedConversation,
    SaveConversation,
    UpdateConversation,
    UpdatedConversation,
)
from ._entry_log import EntryLog, IndexedConversation, LogRun
from ._errors import CorruptConversationError
from ._idempotent import ConversationSaved, idempotent_save, save_revision
from ._retention import prune_idle_records
from ._source import ConversationStoreSource

# Messages are encoded and decoded from this layer's first call on: build pydantic-ai's message
# adapter now, with the rest of a worker's startup, not in its first search or save.
warm_codec()

if TYPE_CHECKING:
    from .postgres import PostgresConversationStore
    from .sqlite import SqliteConversationStore

__all__ = (
    'ConversationEntry',
    'ConversationRecord',
    'ConversationSaved',
    'ConversationStoreSource',
    'CorruptConversationError',
    'DurableConversationStore',
    'EntryLog',
    'IndexedConversation',
    'LoadConversation',
    'LoadedConversation',
    'LogRun',
    'PostgresConversationStore',
    'SaveConversation',
    'SqliteConversationStore',
    'UpdateConversation',
    'UpdatedConversation',
    'idempotent_save',
    'prune_idle_records',
    'save_revision',
)


def __getattr__(name: str) -> Any:
    if name == 'SqliteConversationStore':
        from .sqlite import SqliteConversationStore

        return SqliteConversationStore
    if name == 'PostgresConversationStore':
        from .postgres import PostgresConversationStore

        return PostgresConversationStore
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
