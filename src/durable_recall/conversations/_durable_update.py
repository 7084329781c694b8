"""The durable `update`'s input and output, and what `DurableConversationStore.update` checks first.

`ConversationStore.update` (pydantic-ai-slim>=2.78) changes a conversation's title or metadata. In
workflow code it runs as one activity or step, whose input and output the engine records: only the
fields passed cross (an unset argument is a key left out, as `ConversationDetails` has it), and a
title that no longer matches is recorded as the answer, not as an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._api import ConversationRecord, ConversationStore

__all__ = ('HAS_UPDATE', 'UpdateConversation', 'UpdatedConversation', 'expected_keyword', 'require_update')

HAS_UPDATE = hasattr(ConversationStore, 'update')
"""Whether the installed pydantic-ai has `ConversationStore.update` (pydantic-ai-slim>=2.78)."""


@dataclass(frozen=True)
class UpdateConversation:
    """The input of the durable `update`: what `ConversationStore.update` takes, with only the fields passed.

    Attributes:
        conversation_id: The conversation to update.
        details: The fields to change (`'title'`, `'metadata'`); a key left out is left as it is.
        expected: `{'title': ...}` when `expected_title` was passed, else empty.
        scope: As for `ConversationStore.update`.
    """

    conversation_id: str
    details: dict[str, Any]
    expected: dict[str, Any]
    scope: str | None = None


@dataclass(frozen=True)
class UpdatedConversation:
    """The output of the durable `update`: the record as stored after it, or why it was not written.

    A title that no longer matches `expected_title` is an answer the workflow handles, not a failure
    of the unit: it is recorded as `conflict` (the message) and raised again as `ConversationConflict`
    in workflow code, so a replay or a recovery raises the same exception (an exception the engine
    recorded would come back as its own error type, or, pickled, with its message lost).
    """

    record: ConversationRecord | None
    conflict: str | None = None


def require_update(wrapper: str) -> None:
    """Refuse `update` where pydantic-ai has none to run (before 2.78), naming the version needed.

    Raises:
        NotImplementedError: The installed `ConversationStore` has no `update`.
    """
    if not HAS_UPDATE:
        raise NotImplementedError(
            f'{wrapper}.update needs pydantic-ai-slim>=2.78 (ConversationStore.update): the installed one has none.'
        )


def expected_keyword(expected: dict[str, Any]) -> dict[str, Any]:
    """`update`'s `expected_title` keyword from an `UpdateConversation.expected`, if it carries one."""
    return {'expected_title': expected['title']} if 'title' in expected else {}
