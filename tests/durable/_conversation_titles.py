"""The conversation-title scenario both engines run: an update whose answer is lost, then a conflict.

A workflow titles a conversation as an agent would, then as a second agent would (which must not
replace the title), then sets metadata, then tries a read that workflow code must not make. The
store commits the first update and then loses its answer once, so the engine retries it.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic_ai.conversation_store import ConversationConflict, ConversationRecord

from durable_recall.conversations import SqliteConversationStore
from durable_recall.errors import StoreUnavailableError, WorkflowCodeIOError

__all__ = ('HAS_UPDATE', 'LosingTitleStore', 'check_titles', 'title_twice')

HAS_UPDATE = hasattr(SqliteConversationStore, 'update')
"""pydantic-ai-slim>=2.78: `ConversationStore.update` (a conversation's title and metadata)."""


class LosingTitleStore(SqliteConversationStore):
    """A SQLite store whose `write_details` for the conversations in `lose_answer` commits, then fails once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lose_answer: set[str] = set()
        self.details_writes: dict[str, int] = {}

    async def write_details(self, conversation_id: str, details: Any, **kwargs: Any) -> ConversationRecord:
        record = await super().write_details(conversation_id, details, **kwargs)
        self.details_writes[conversation_id] = self.details_writes.get(conversation_id, 0) + 1
        if conversation_id in self.lose_answer:
            self.lose_answer.discard(conversation_id)
            raise StoreUnavailableError(f'the answer of the update of {conversation_id!r} was lost (after its commit)')
        return record


class _Titles(Protocol):
    async def update(
        self, conversation_id: str, *, title: Any = ..., metadata: Any = ..., expected_title: Any = ...
    ) -> ConversationRecord: ...
    async def read_record(self, conversation_id: str) -> ConversationRecord | None: ...


async def title_twice(titles: _Titles, conversation_id: str) -> list[Any]:
    """The workflow's body: what each step said, in order (an engine's durable store as `titles`)."""
    said: list[Any] = []
    titled = await titles.update(conversation_id, title='ZEBRA agent title', expected_title=None)
    said.append(titled.title)
    try:
        await titles.update(conversation_id, title='QUAGGA second title', expected_title=None)
        said.append('replaced')
    except ConversationConflict as conflict:
        said.append(f'conflict: {conflict}')
    updated = await titles.update(conversation_id, metadata={'model': 'okapi', 'turns': 1})
    said += [updated.title, updated.metadata]
    try:
        await titles.read_record(conversation_id)
    except WorkflowCodeIOError:
        said.append('read_record refused')
    return said


async def check_titles(said: list[Any], conversation_id: str, store: LosingTitleStore) -> None:
    """The retried update recognised its own write, the conflict reached the workflow, the store holds one title."""
    assert said[0] == 'ZEBRA agent title', 'the retried update recognised its own write'
    assert said[1] == (
        f"conflict: Conversation {conversation_id!r} is titled 'ZEBRA agent title', not None, so it was not updated."
    ), 'a conflict reaches the workflow as itself, not retried'
    assert said[2:] == ['ZEBRA agent title', {'model': 'okapi', 'turns': 1}, 'read_record refused']
    record = await store.read_record(conversation_id)
    assert record is not None and (record.title, record.metadata) == (
        'ZEBRA agent title',
        {'model': 'okapi', 'turns': 1},
    )
    assert store.details_writes[conversation_id] == 2  # the title once (not again on retry), the metadata once
