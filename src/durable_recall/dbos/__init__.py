"""DBOS specifics: `DBOSConversationStore`, whose `load` and `save` are DBOS steps in workflow code.

Import this subpackage only where DBOS is used; the top-level `durable_recall` package never imports
it, so importing the library loads no engine. (Agents need nothing from here: pydantic-ai's
`DBOSDurability()` runs `StepPersistence` and `ConversationSearch` as steps.)
"""

from __future__ import annotations

try:
    import dbos  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as _import_error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'durable_recall.dbos needs the `dbos` package: pip install "durable-recall[dbos]"'
    ) from _import_error

from ._conversations import DBOSConversationStore

__all__ = ('DBOSConversationStore',)
