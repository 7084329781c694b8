"""A delete never releases entries a save or fork is about to point at: the fork conflicts instead."""

from __future__ import annotations

import anyio
import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict, ConversationRecord, ConversationStore

from ._helpers import echo_agent
from .conftest import ConversationKit, close_store

pytestmark = pytest.mark.anyio


async def test_a_fork_of_a_deleted_history_conflicts(conversation_store: ConversationStore) -> None:
    store = conversation_store
    await store.save(await echo_agent().run('one', conversation=Conversation(conversation_id='c-1')))
    record = await store.read_record('c-1')
    assert record is not None
    history = await store.read_history(record.head_id)
    await store.delete('c-1')  # between the fork's read and its write
    fork = ConversationRecord(conversation_id='c-2', head_id=history[0].id, forked_from='c-1', forked_at=history[0].id)
    with pytest.raises(ConversationConflict):
        await store.write_record(fork, expected_revision=None)
    assert await store.read_record('c-2') is None


async def test_concurrent_forks_and_deletes_leave_every_record_whole(sql_conversation_kit: ConversationKit) -> None:
    kit = sql_conversation_kit
    agent = echo_agent()
    sources = [f'source-{i}' for i in range(6)]
    for cid in sources:
        result = await agent.run(f'hello {cid}', conversation=Conversation(conversation_id=cid))
        await kit.store.save(result)
        loaded = await kit.store.load(cid)
        assert loaded is not None
        await kit.store.save(await agent.run(f'more {cid}', conversation=loaded))
    forker, deleter = kit.reopen(), kit.reopen()
    outcomes: list[str] = []

    async def fork(cid: str) -> None:
        for n in range(4):
            try:
                await forker.fork(cid, at=2 + n % 2, new_conversation_id=f'{cid}-fork-{n}')
                outcomes.append('forked')
            except (ConversationConflict, Exception) as error:  # the source may be gone already
                outcomes.append(type(error).__name__)

    async def delete(cid: str) -> None:
        await anyio.sleep(0)
        await deleter.delete(cid)

    async with anyio.create_task_group() as group:
        for cid in sources:
            group.start_soon(fork, cid)
            group.start_soon(delete, cid)
    for record in await kit.store.list_conversations():
        assert record.conversation_id.split('-fork-')[0] in sources
        loaded = await kit.store.load(record.conversation_id)  # raises if a delete released its entries
        assert loaded is not None and len(loaded.messages) in (2, 3)
    assert all(outcome in ('forked', 'UserError', 'ConversationConflict') for outcome in outcomes)
    for store in (forker, deleter):
        await close_store(store)
