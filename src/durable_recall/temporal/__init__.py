"""Temporal specifics: the worker plugin, and a conversation store whose load and save are activities.

`DurableRecallPlugin` lets workflow code import durable-recall as it is; `TemporalConversationStore`
runs a conversation store's `load` and `save` as activities when workflow code calls them (it needs
pydantic-ai-slim>=2.68, and loads on first use, so the plugin works on every supported pydantic-ai);
`ConversationPayloadCodec` with `ConversationPayloadConverter` (`conversation_data_converter`)
encrypts a conversation's payloads in workflow histories with a key that deleting it deletes.

Import this subpackage only where Temporal is used (a worker, a replayer, a client factory); the
top-level `durable_recall` package never imports it, so importing the library loads no engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import temporalio  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as _import_error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'durable_recall.temporal needs the `temporalio` package: pip install "durable-recall[temporal]"'
    ) from _import_error

from ._dev_server import dev_server_path
from ._journal import (
    ConversationPayloadCodec,
    ConversationPayloadConverter,
    conversation_data_converter,
)
from ._plugin import SANDBOX_PASSTHROUGH_MODULES, DurableRecallPlugin, with_durable_recall_passthrough

if TYPE_CHECKING:
    from ._conversations import TemporalConversationStore

__all__ = (
    'SANDBOX_PASSTHROUGH_MODULES',
    'ConversationPayloadCodec',
    'ConversationPayloadConverter',
    'DurableRecallPlugin',
    'TemporalConversationStore',
    'conversation_data_converter',
    'dev_server_path',
    'with_durable_recall_passthrough',
)


def __getattr__(name: str) -> Any:
    # The conversation store wrapper loads on first use: it needs pydantic-ai's conversation store
    # API (pydantic-ai-slim>=2.68), and the plugin, which workers need on every supported version, must not.
    if name == 'TemporalConversationStore':
        from ..base import require_conversation_store

        require_conversation_store('durable_recall.temporal.TemporalConversationStore')
        from ._conversations import TemporalConversationStore

        return TemporalConversationStore
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
