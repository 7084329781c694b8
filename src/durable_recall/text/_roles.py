"""Who a message is from, as the search tool's `roles` filter names it, and when it was created."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

from .._vocabulary import ROLES, Role

__all__ = ('ROLES', 'Role', 'message_role', 'message_time')


def message_role(message: ModelMessage) -> Role:
    """The role a message counts as for filtering: a request with tool returns is `tool`.

    A request that holds nothing but compaction summaries (the record's view of a summary, or one an
    application wrote) is `summary`: it restates the conversation, so a search can leave it out.
    One of nothing but capability parts is `capability`: pydantic-ai delivers an enqueued part as a
    request of its own. Merged into a request with a user prompt or tool returns, it counts as theirs.
    """
    if message.kind == 'response':
        return 'assistant'
    kinds = {part.part_kind for part in message.parts}
    if kinds and kinds - _BOOKKEEPING == {'compaction'}:
        return 'summary'
    if kinds and kinds - _BOOKKEEPING == {'capability'}:
        return 'capability'
    if kinds & {'tool-return', 'retry-prompt'}:
        return 'tool'
    if kinds and kinds <= {'system-prompt', 'instruction-delta', 'instruction-baseline'}:
        return 'system'
    return 'user'


_BOOKKEEPING = frozenset({'instruction-delta', 'instruction-baseline'})
"""Parts core may add to any request, which do not change whose it is."""


def message_time(message: ModelMessage, started_at: datetime) -> datetime:
    """When a message was created: its own timestamp, else its run's start."""
    return message.timestamp or started_at
