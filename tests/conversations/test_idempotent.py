"""`idempotent_save` and `DurableConversationStore` outside workflow code, on every backend.

The engine tests (`tests/durable/test_conversation_*.py`) show the same thing under Temporal and DBOS;
these pin the semantics: a retried save whose first attempt committed answers as the first did,
stores nothing twice, and a real conflict still raises.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import ConversationConflict, ConversationEntry, ConversationStore
from pydantic_ai.exceptions import UserError

from durable_recall.conversations import (
    ConversationSaved,
    DurableConversationStore,
    LoadConversation,
    LoadedConversation,
    SaveConversation,
    idempotent_save,
    save_revision,
)
from durable_recall.errors import WorkflowCodeIOError

from ._helpers import echo_agent, texts

pytestmark = pytest.mark.anyio

AGENT = echo_agent()


def crossed(conversation: Conversation) -> Conversation:
    """The conversation as it comes out of a durable journal: serialized, so without in-process marks."""
    return ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(conversation))


async def entry_count(store: ConversationStore, conversation_id: str) -> int:
    record = await store.read_record(conversation_id)
    assert record is not None
    return len(await store.read_history(record.head_id))


async def test_a_retry_after_a_lost_answer_recognises_its_commit(conversation_store: ConversationStore) -> None:
    result = await AGENT.run('first', conversation=Conversation(conversation_id='c'))
    first = await idempotent_save(conversation_store, crossed(result.conversation), save_id=result.run_id)
    assert not first.replayed and len(first.entry_ids) == 2 and first.parent_id is None

    # The answer was lost: the engine runs the same save, with the same input, again.
    again = await idempotent_save(conversation_store, crossed(result.conversation), save_id=result.run_id)
    assert again == ConversationSaved('c', first.revision, first.entry_ids, None, 2, replayed=True)
    assert first.revision == save_revision('c', result.run_id)
    assert await entry_count(conversation_store, 'c') == 2

    # The conversation continues from the revision both answers gave.
    loaded = await conversation_store.load('c')
    assert loaded is not None and loaded.revision == first.revision
    second = await AGENT.run('second', conversation=crossed(loaded))
    saved = await idempotent_save(conversation_store, crossed(second.conversation), save_id=second.run_id)
    assert saved.parent_id == first.entry_ids[-1] and len(saved.entry_ids) == 2
    reloaded = await conversation_store.load('c')
    assert reloaded is not None
    assert texts(reloaded.messages)[::2] == ['first', 'second']
    record = await conversation_store.read_record('c')
    assert record is not None and record.branches == []


async def test_another_writer_still_conflicts(conversation_store: ConversationStore) -> None:
    await conversation_store.save(Conversation(conversation_id='c'))
    loaded = await conversation_store.load('c')
    assert loaded is not None
    mine = await AGENT.run('mine', conversation=crossed(loaded))
    theirs = await AGENT.run('theirs', conversation=crossed(loaded))
    await idempotent_save(conversation_store, crossed(theirs.conversation), save_id='theirs')
    with pytest.raises(ConversationConflict):
        await idempotent_save(conversation_store, crossed(mine.conversation), save_id='mine')


async def test_a_save_that_changes_nothing_is_idempotent_too(conversation_store: ConversationStore) -> None:
    conversation = Conversation(conversation_id='empty')
    one = await idempotent_save(conversation_store, conversation, save_id='s1')
    two = await idempotent_save(conversation_store, Conversation(conversation_id='empty'), save_id='s1')
    assert one.entry_ids == two.entry_ids == () and two.replayed and conversation.revision == one.revision


async def test_a_save_id_is_required() -> None:
    from pydantic_ai.conversation_store import InMemoryConversationStore

    with pytest.raises(UserError, match='save_id'):
        await idempotent_save(InMemoryConversationStore(), Conversation(), save_id='')


class _Inline(DurableConversationStore):
    """The engine-free base with a switch for 'this is workflow code', durable units run inline and counted."""

    def __init__(self, store: ConversationStore) -> None:
        super().__init__(store, name='test')
        self.workflow = False
        self.units: list[str] = []

    def in_workflow_code(self) -> bool:
        return self.workflow

    async def _load_durably(self, request: LoadConversation) -> LoadedConversation:
        self.units.append('load')
        loaded = await self.load_operation(request)
        return LoadedConversation(None if loaded.conversation is None else crossed(loaded.conversation))

    async def _save_durably(self, request: SaveConversation) -> ConversationSaved:
        self.units.append('save')
        return await self.save_operation(SaveConversation(crossed(request.conversation), request.save_id))


async def test_the_wrapper_runs_the_core_loop_and_a_result_continues(conversation_store: ConversationStore) -> None:
    store = _Inline(conversation_store)
    store.workflow = True
    conversation = await store.load('w') or Conversation(conversation_id='w')
    result = await AGENT.run('one', conversation=conversation)
    entries = await store.save(result)
    assert [type(entry) for entry in entries] == [ConversationEntry, ConversationEntry]
    # Like core's save: the result's conversation continues from the new revision.
    follow = await AGENT.run('two', conversation=result.conversation)
    await store.save(follow)
    assert store.units == ['load', 'save', 'save']
    store.workflow = False
    loaded = await store.load('w')
    assert loaded is not None and texts(loaded.messages)[::2] == ['one', 'two']
    assert [entry.id for entry in entries] == [entry.id for entry in (await store.load_entries('w') or [])][:2]


async def test_in_workflow_code_other_io_is_refused_and_a_plain_save_needs_an_id() -> None:
    from pydantic_ai.conversation_store import InMemoryConversationStore

    store = _Inline(InMemoryConversationStore())
    store.workflow = True
    with pytest.raises(WorkflowCodeIOError, match='only `load`, `save` and `update` are durable'):
        await store.list_conversations()
    with pytest.raises(UserError, match='save_id'):
        await store.save(Conversation(conversation_id='x'))
    await store.save(Conversation(conversation_id='x'), save_id='x-1')
    assert store.units == ['save']


class _Named(_Inline):
    def __init__(self, name: str) -> None:
        from pydantic_ai.conversation_store import InMemoryConversationStore

        DurableConversationStore.__init__(self, InMemoryConversationStore(), name=name)


@pytest.mark.parametrize('name', ['', 'has space', 'a.b', 'x' * 101])
def test_names_are_checked(name: Any) -> None:
    with pytest.raises(UserError, match='name'):
        _Named(name)
