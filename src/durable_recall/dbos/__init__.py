"""DBOS specifics: `DBOSConversationStore`, whose `load` and `save` are DBOS steps in workflow code.

Import this subpackage only where DBOS is used; the top-level `durable_recall` package never imports
it, so importing the library loads no engine. (Agents need nothing from here: pydantic-ai's
`DBOSDurability()` runs `StepPersistence` and `ConversationSearch` as steps.) `ConversationSerializer`
encrypts a conversation's values in DBOS's system database with a key that deleting it deletes, and
`delete_conversation_workflows` deletes its workflows there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import dbos  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as _import_error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'durable_recall.dbos needs the `dbos` package: pip install "durable-recall[dbos]"'
    ) from _import_error

from ._journal import ConversationSerializer, delete_conversation_workflows

if TYPE_CHECKING:
    from ._conversations import DBOSConversationStore

__all__ = ('ConversationSerializer', 'DBOSConversationStore', 'delete_conversation_workflows')


def __getattr__(name: str) -> Any:
    # Loads on first use, like `durable_recall.temporal.TemporalConversationStore`: it needs pydantic-ai's
    # conversation store API (pydantic-ai-slim>=2.68), and older versions get an error saying so.
    if name == 'DBOSConversationStore':
        from ..base import require_conversation_store

        require_conversation_store('durable_recall.dbos.DBOSConversationStore')
        from ._conversations import DBOSConversationStore

        return DBOSConversationStore
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
