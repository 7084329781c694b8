"""`idempotent_save`: a `ConversationStore.save` that can be retried, with ids chosen by the caller's key.

pydantic-ai's `save` mints a new revision and new entry ids (uuid7) on every call. That is right for
one process, but not for a durable engine: a save that commits and whose answer is then lost (the
worker dies, the activity times out, the DBOS step is not checkpointed) is run again, finds the
revision it committed instead of the one it expected, and raises `ConversationConflict`, although
the conversation holds exactly what it meant to store.

Here the revision and the entry ids are derived from a *save id*, a string the caller picks once per
logical save and keeps across retries (on Temporal and DBOS: the agent run's id, which the durability
capabilities keep stable across replay and recovery). A retry then recognises its own earlier commit
("the stored revision is already ours") and answers as the first attempt would have. The save itself
is still core's: the same comparison with the stored history, the same branches, the same revision
check; only the ids it writes are replaced, on their way to the store's `write_record`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic_ai.conversation import Conversation

from ._api import ConversationConflict, ConversationEntry, ConversationRecord, ConversationStore

__all__ = ('ConversationSaved', 'idempotent_save', 'save_revision')

_NAMESPACE = uuid.UUID('6f1c2f7e-5d55-4c43-9a39-6d7572632d63')
"""The uuid5 namespace of derived revisions and entry ids. Compatibility data: changing it makes a
retry of a save committed by an older release unrecognisable (it would raise `ConversationConflict`)."""


@dataclass(frozen=True)
class ConversationSaved:
    """What a save stored: small, so it crosses a durable boundary (an activity result, a DBOS step output) cheaply.

    Attributes:
        conversation_id: The conversation saved.
        revision: Its revision now: continue (and save again) from it.
        entry_ids: The ids of the entries this save appended, in order; empty when nothing was new.
        parent_id: The entry the first appended one follows (`None` at the start of a history, or
            when nothing was appended).
        message_count: How many messages the saved conversation holds (the index new messages start at).
        replayed: `True` when an earlier attempt with the same save id had already committed it.
    """

    conversation_id: str
    revision: str
    entry_ids: tuple[str, ...]
    parent_id: str | None
    message_count: int
    replayed: bool = False


def save_revision(conversation_id: str, save_id: str) -> str:
    """The revision a save of `conversation_id` under `save_id` writes: the same on every attempt."""
    return str(uuid.uuid5(_NAMESPACE, f'{conversation_id}\x00{save_id}'))


def _entry_id(conversation_id: str, save_id: str, index: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f'{conversation_id}\x00{save_id}\x00{index}'))


async def idempotent_save(
    store: ConversationStore, conversation: Conversation, *, save_id: str, scope: str | None = None
) -> ConversationSaved:
    """Save `conversation` as `store.save` does, but so that a retry under the same `save_id` succeeds.

    Works over any `ConversationStore` (it writes through the store's public primitives). On success
    `conversation.revision` is advanced and `new_message_index` set past its messages, as `save` does.

    Args:
        store: The conversation store.
        conversation: The conversation to save (`result.conversation` after a run).
        save_id: Names this logical save: the same on every retry, different for every other save of
            the conversation (a run's `run_id` is both). The revision and the entry ids are derived
            from it and the conversation id.
        scope: As for `ConversationStore.save`.

    Returns:
        What was stored; `replayed=True` when an earlier attempt had already stored it.

    Raises:
        ConversationConflict: The conversation was saved or deleted by someone else since it was
            loaded (and not by an earlier attempt of this save).
        UserError: `save_id` is empty.
    """
    if not isinstance(save_id, str) or not save_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        from pydantic_ai.exceptions import UserError

        raise UserError(f'idempotent_save needs a non-empty string save_id, got {save_id!r}')
    cid = conversation.conversation_id
    ours = save_revision(cid, save_id)
    count = len(conversation.messages)
    stored = await store.read_record(cid)
    if stored is not None and stored.revision == ours:
        return await _already_saved(store, conversation, stored, save_id, count)
    keyed = _KeyedWrites(store, save_id)
    try:
        await keyed.save(conversation, scope=scope)
    except ConversationConflict:
        # A duplicate attempt running at the same time may have committed between our read and write.
        current = await store.read_record(cid)
        if current is not None and current.revision == ours:
            return await _already_saved(store, conversation, current, save_id, count)
        raise
    conversation.revision = ours
    conversation.new_message_index = count
    return ConversationSaved(cid, ours, tuple(entry.id for entry in keyed.written), keyed.parent_id, count)


async def _already_saved(
    store: ConversationStore, conversation: Conversation, record: ConversationRecord, save_id: str, count: int
) -> ConversationSaved:
    """The answer of the attempt that committed: its entries are the tail of the history that our ids name."""
    cid = conversation.conversation_id
    history = await store.read_history(record.head_id) if record.head_id is not None else []
    ours = {_entry_id(cid, save_id, index) for index in range(len(history))}
    tail = len(history)
    while tail > 0 and history[tail - 1].id in ours:
        tail -= 1
    written = history[tail:]
    parent_id = written[0].parent_id if written else None
    conversation.revision = record.revision
    conversation.new_message_index = count
    return ConversationSaved(cid, record.revision, tuple(entry.id for entry in written), parent_id, count, True)


class _KeyedWrites(ConversationStore):
    """`store` seen through core's `save`, with the revision and new entry ids replaced by derived ones."""

    def __init__(self, store: ConversationStore, save_id: str) -> None:
        self._store = store
        self._save_id = save_id
        self.written: list[ConversationEntry] = []
        self.parent_id: str | None = None

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return await self._store.read_record(conversation_id)

    async def read_records(self, *, scope: str | None = None, limit: int | None = None) -> Sequence[ConversationRecord]:
        return await self._store.read_records(scope=scope, limit=limit)  # pragma: no cover - save does not list

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        return await self._store.read_history(head_id, limit=limit)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        return await self._store.read_entry(entry_id)  # pragma: no cover - read_history is delegated whole

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        raise AssertionError('save never deletes')  # pragma: no cover

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        cid = record.conversation_id
        renamed = {entry.id: _entry_id(cid, self._save_id, index) for index, entry in enumerate(new_entries)}
        entries = [
            replace(entry, id=renamed[entry.id], parent_id=renamed.get(entry.parent_id or '', entry.parent_id))
            for entry in new_entries
        ]
        head_id = renamed.get(record.head_id or '', record.head_id)
        keyed = replace(record, head_id=head_id, revision=save_revision(cid, self._save_id))
        await self._store.write_record(keyed, new_entries=entries, expected_revision=expected_revision)
        self.written = entries
        self.parent_id = entries[0].parent_id if entries else None
