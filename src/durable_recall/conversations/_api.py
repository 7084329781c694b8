"""pydantic-ai's conversation store API, imported for the whole package here and only here.

`pydantic_ai.conversation_store` is newer than the oldest pydantic-ai durable-recall supports (2.62).
Every module of this package takes the API's names from this module, so whichever loads first fails
with [`PydanticAIVersionError`][durable_recall.errors.PydanticAIVersionError] naming the version to
install, never with a bare `ModuleNotFoundError`, and the rest of durable-recall keeps working there.
"""

from __future__ import annotations

import dataclasses

from ..base import require_conversation_store

try:
    from pydantic_ai.conversation_store import (
        ConversationConflict,
        ConversationEntry,
        ConversationRecord,
        ConversationStore,
    )
except ImportError:
    require_conversation_store('durable_recall.conversations')  # raises, naming the version needed
    raise  # the API is there but failed to import: that error is the one to see

__all__ = (
    'RECORD_HAS_DETAILS',
    'ConversationConflict',
    'ConversationEntry',
    'ConversationRecord',
    'ConversationStore',
)

RECORD_HAS_DETAILS = {'title', 'metadata'} <= {field.name for field in dataclasses.fields(ConversationRecord)}
"""Whether the installed `ConversationRecord` carries `title` and `metadata` (pydantic-ai-slim>=2.78).

Before that (2.68 to 2.77) the stores keep the columns but have nothing to return them on, and
`ConversationStore` has no `update`; our `write_details` then refuses, as core's default does.
"""
