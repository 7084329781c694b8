"""`DurableConversationStore.update` without an engine: in workflow code one durable unit, elsewhere the store's.

`_Units` runs the durable units inline and counts them, with a switch for "this is workflow code";
the engines' own tests (tests/durable/test_conversation_*.py) run the same on Temporal and DBOS.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict, ConversationStore, InMemoryConversationStore
from pydantic_ai.messages import ModelRequest, UserPromptPart

from durable_recall.conversations import (
    DurableConversationStore,
    LoadConversation,
    LoadedConversation,
    SaveConversation,
    UpdateConversation,
    UpdatedConversation,
)
from durable_recall.errors import WorkflowCodeIOError

from .test_details import HAS_DETAILS

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not HAS_DETAILS, reason='ConversationStore.update needs pydantic-ai-slim>=2.78'),
]


class _Units(DurableConversationStore):
    """Durable units run inline; each update's request goes through pickle, as a recorded input would."""

    def __init__(self, store: ConversationStore) -> None:
        super().__init__(store, name='test')
        self.workflow = True
        self.units: list[UpdateConversation] = []

    def in_workflow_code(self) -> bool:
        return self.workflow

    async def _load_durably(self, request: LoadConversation) -> LoadedConversation:
        return await self.load_operation(request)

    async def _save_durably(self, request: SaveConversation) -> Any:
        return await self.save_operation(request)

    async def _update_durably(self, request: UpdateConversation) -> UpdatedConversation:
        self.units.append(request)
        return pickle.loads(pickle.dumps(await self.update_operation(pickle.loads(pickle.dumps(request)))))


class _Old(DurableConversationStore):
    """A subclass written before `update`: it overrides only the load and save units."""

    def in_workflow_code(self) -> bool:
        return True

    async def _load_durably(self, request: LoadConversation) -> LoadedConversation:
        raise AssertionError('not called')

    async def _save_durably(self, request: SaveConversation) -> Any:
        raise AssertionError('not called')


async def _stored(store: ConversationStore) -> None:
    await store.save(Conversation(conversation_id='c-1', messages=[ModelRequest(parts=[UserPromptPart('hi')])]))


async def test_update_in_workflow_code_is_one_unit_with_only_the_fields_passed(
    conversation_store: ConversationStore,
) -> None:
    await _stored(conversation_store)
    durable = _Units(conversation_store)
    record = await durable.update('c-1', title='ZEBRA', expected_title=None)
    assert record.title == 'ZEBRA'
    record = await durable.update('c-1', metadata={'k': [1]})
    assert (record.title, record.metadata) == ('ZEBRA', {'k': [1]})
    assert durable.units == [
        UpdateConversation('c-1', {'title': 'ZEBRA'}, {'title': None}),
        UpdateConversation('c-1', {'metadata': {'k': [1]}}, {}),
    ]
    with pytest.raises(ConversationConflict, match="titled 'ZEBRA', not None") as raised:
        await durable.update('c-1', title='QUAGGA', expected_title=None)
    assert raised.value.conversation_id == 'c-1'
    with pytest.raises(WorkflowCodeIOError, match='write_details'):
        await durable.write_details('c-1', {'title': 'x'}, expected_revision='r')
    durable.workflow = False  # outside workflow code: the store's own update, no unit
    assert (await durable.update('c-1', title='QUAGGA', expected_title='ZEBRA')).title == 'QUAGGA'
    assert len(durable.units) == 3


async def test_a_retried_unit_recognises_its_own_write(conversation_store: ConversationStore) -> None:
    await _stored(conversation_store)
    durable = _Units(conversation_store)
    request = UpdateConversation('c-1', {'title': 'ZEBRA', 'metadata': {'m': 1}}, {'title': None})
    first = await durable.update_operation(request)
    again = await durable.update_operation(request)  # the first answer was lost: the engine runs it again
    assert first.record is not None and again.record is not None
    assert (again.record.title, again.record.metadata, again.conflict) == ('ZEBRA', {'m': 1}, None)
    # Another title was set since: that is a conflict, recorded as the unit's answer.
    other = await durable.update_operation(UpdateConversation('c-1', {'title': 'QUAGGA'}, {'title': None}))
    assert other.record is None and other.conflict is not None and "titled 'ZEBRA'" in other.conflict
    # So is a title set since that a check-only update expected to be unset.
    check = await durable.update_operation(UpdateConversation('c-1', {}, {'title': None}))
    assert check.record is None and check.conflict is not None


async def test_a_wrapper_without_an_update_unit_refuses_in_workflow_code() -> None:
    store = InMemoryConversationStore()
    await _stored(store)
    with pytest.raises(NotImplementedError, match='_Old runs no durable `update`'):
        await _Old(store, name='old').update('c-1', title='ZEBRA')
    record = await store.read_record('c-1')
    assert record is not None and record.title is None  # nothing written from workflow code
