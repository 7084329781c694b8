"""The error a conversation store raises for a stored row it cannot read back."""

from __future__ import annotations

from ..base import DurableRecallError

__all__ = ('CorruptConversationError',)


class CorruptConversationError(DurableRecallError):
    """A stored conversation record or entry cannot be decoded.

    Raised instead of reading the row back as something else (an empty usage, a skipped message),
    so nothing is silently lost or invented. It is not a `LookupError`: pydantic-ai's
    `ConversationStore` retries a read whose entries went missing under a concurrent delete, and a
    corrupt row must not be mistaken for one.

    Attributes:
        conversation_id: The conversation whose record is corrupt, when a record is.
        entry_id: The entry that is corrupt, when an entry is.
        reason: What is wrong with the row.
    """

    def __init__(self, *, conversation_id: str | None = None, entry_id: str | None = None, reason: str) -> None:
        if entry_id is not None:
            what = f'entry {entry_id!r}' + (f' of conversation {conversation_id!r}' if conversation_id else '')
        else:
            what = f'the record of conversation {conversation_id!r}'
        super().__init__(f'{what} is corrupt: {reason}')
        self.conversation_id = conversation_id
        self.entry_id = entry_id
        self.reason = reason
