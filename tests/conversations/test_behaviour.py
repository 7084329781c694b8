"""pydantic-ai's `ConversationStore` behaviour, on core's in-memory store and on ours alike."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import ConversationConflict, ConversationStore
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from ._helpers import echo_agent, texts

pytestmark = pytest.mark.anyio


async def _turns(store: ConversationStore, conversation_id: str, prompts: list[str]) -> Conversation:
    """Run each prompt as load -> run -> save, and return the last saved conversation."""
    agent = echo_agent()
    conversation = Conversation(conversation_id=conversation_id)
    for prompt in prompts:
        loaded = await store.load(conversation_id)
        result = await agent.run(prompt, conversation=loaded or conversation)
        await store.save(result)
        conversation = result.conversation
    return conversation


async def test_round_trip_is_exact(conversation_store: ConversationStore) -> None:
    last = await _turns(conversation_store, 'c-1', ['first', 'second', 'third'])
    loaded = await conversation_store.load('c-1')
    assert loaded is not None
    assert loaded.messages == last.messages
    assert loaded.usage == last.usage and loaded.usage.requests == 3
    assert loaded.revision == last.revision
    assert texts(loaded.messages)[:2] == ['first', 'noted: first (1 messages seen)']
    entries = await conversation_store.load_entries('c-1')
    assert entries is not None and [entry.message for entry in entries] == last.messages
    assert [entry.parent_id for entry in entries[1:]] == [entry.id for entry in entries[:-1]]
    assert await conversation_store.load('missing') is None


async def test_save_stores_only_new_messages_and_returns_them(conversation_store: ConversationStore) -> None:
    await _turns(conversation_store, 'c-1', ['one'])
    loaded = await conversation_store.load('c-1')
    assert loaded is not None
    result = await echo_agent().run('two', conversation=loaded)
    stored = await conversation_store.save(result)
    assert texts([entry.message for entry in stored]) == ['two', 'noted: two (3 messages seen)']
    assert await conversation_store.save(result) == []  # nothing new: only the revision moves


async def test_stale_revision_conflicts_and_stores_nothing(conversation_store: ConversationStore) -> None:
    await _turns(conversation_store, 'c-1', ['one'])
    first = await conversation_store.load('c-1')
    second = await conversation_store.load('c-1')
    assert first is not None and second is not None
    await conversation_store.save(await echo_agent().run('from A', conversation=first))
    with pytest.raises(ConversationConflict) as raised:
        await conversation_store.save(await echo_agent().run('from B', conversation=second))
    assert raised.value.conversation_id == 'c-1'
    loaded = await conversation_store.load('c-1')
    assert loaded is not None and 'from B' not in texts(loaded.messages) and 'from A' in texts(loaded.messages)


async def test_a_new_conversation_cannot_overwrite_a_stored_one(conversation_store: ConversationStore) -> None:
    await _turns(conversation_store, 'c-1', ['one'])
    with pytest.raises(ConversationConflict):
        await conversation_store.save(await echo_agent().run('again', conversation=Conversation(conversation_id='c-1')))


async def test_limit_loads_a_window_and_saves_append_to_the_whole(conversation_store: ConversationStore) -> None:
    await _turns(conversation_store, 'c-1', ['one', 'two'])
    window = await conversation_store.load('c-1', limit=2)
    assert window is not None and texts(window.messages) == ['two', 'noted: two (3 messages seen)']
    result = await echo_agent().run('three', conversation=window)
    assert texts(result.all_messages())[-1] == 'noted: three (3 messages seen)'  # the run saw the window only
    await conversation_store.save(result)
    whole = await conversation_store.load('c-1')
    assert whole is not None
    assert [text.split(' (')[0] for text in texts(whole.messages)] == [
        'one',
        'noted: one',
        'two',
        'noted: two',
        'three',
        'noted: three',
    ]
    assert await conversation_store.load('c-1', limit=0) is not None
    with pytest.raises(UserError):
        await conversation_store.load('c-1', limit=-1)


async def test_branch_leaves_the_old_history_and_can_come_back(conversation_store: ConversationStore) -> None:
    last = await _turns(conversation_store, 'c-1', ['one', 'two'])
    old = await conversation_store.load_entries('c-1')
    assert old is not None
    branched = await conversation_store.branch('c-1', at=2, expected_revision=last.revision)
    assert texts(branched.messages) == ['one', 'noted: one (1 messages seen)']
    await conversation_store.save(await echo_agent().run('two again', conversation=branched))
    record = await conversation_store.read_record('c-1')
    assert record is not None and record.branches == [old[-1].id]
    loaded = await conversation_store.load('c-1')
    assert loaded is not None and 'two again' in texts(loaded.messages) and 'two' not in texts(loaded.messages)
    back = await conversation_store.branch('c-1', from_entry=old[-1].id, expected_revision=loaded.revision)
    assert back.messages == [entry.message for entry in old]
    with pytest.raises(ConversationConflict):
        await conversation_store.branch('c-1', at=1, expected_revision=loaded.revision)


async def test_a_rewritten_history_is_saved_as_a_branch(conversation_store: ConversationStore) -> None:
    await _turns(conversation_store, 'c-1', ['one', 'two'])
    loaded = await conversation_store.load('c-1')
    assert loaded is not None
    # Serialized and read back (new_message_index is lost), with the second turn replaced.
    copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(loaded))
    copy.messages = copy.messages[:2]
    await conversation_store.save(await echo_agent().run('rewritten', conversation=copy))
    record = await conversation_store.read_record('c-1')
    assert record is not None and len(record.branches) == 1
    branch = await conversation_store.read_history(record.branches[0])
    assert texts([entry.message for entry in branch])[2] == 'two'


async def test_fork_shares_entries_and_goes_its_own_way(conversation_store: ConversationStore) -> None:
    await _turns(conversation_store, 'c-1', ['one', 'two'])
    fork = await conversation_store.fork('c-1', at=2, new_conversation_id='c-2')
    assert texts(fork.messages) == ['one', 'noted: one (1 messages seen)']
    await conversation_store.save(await echo_agent().run('fork turn', conversation=fork))
    source = await conversation_store.load_entries('c-1')
    forked = await conversation_store.load_entries('c-2')
    assert source is not None and forked is not None
    assert [entry.id for entry in forked[:2]] == [entry.id for entry in source[:2]]  # shared, not copied
    assert len(source) == 4 and 'fork turn' in texts([entry.message for entry in forked])
    record = await conversation_store.read_record('c-2')
    assert record is not None and (record.forked_from, record.forked_at) == ('c-1', source[1].id)
    with pytest.raises(ConversationConflict):
        await conversation_store.fork('c-1', new_conversation_id='c-2')


async def test_scopes_isolate_reads_writes_and_deletes(conversation_store: ConversationStore) -> None:
    agent = echo_agent()
    await conversation_store.save(await agent.run('alice', conversation=Conversation(conversation_id='a')), scope='u1')
    await conversation_store.save(await agent.run('bob', conversation=Conversation(conversation_id='b')), scope='u2')
    assert await conversation_store.load('a', scope='u2') is None
    assert await conversation_store.load_entries('a', scope='u2') is None
    assert (await conversation_store.load('a', scope='u1')) is not None
    assert [record.conversation_id for record in await conversation_store.list_conversations(scope='u1')] == ['a']
    assert {record.conversation_id for record in await conversation_store.list_conversations()} == {'a', 'b'}
    await conversation_store.delete('a', scope='u2')
    assert await conversation_store.load('a') is not None
    loaded = await conversation_store.load('a')
    assert loaded is not None
    with pytest.raises(ConversationConflict):
        await conversation_store.save(loaded, scope='u2')
    with pytest.raises(UserError):
        await conversation_store.fork('a', source_scope='u2')
    await conversation_store.delete('a', scope='u1')
    assert await conversation_store.load('a') is None


async def test_list_conversations_newest_first_with_limit(conversation_store: ConversationStore) -> None:
    for cid in ['x', 'y', 'z']:
        await _turns(conversation_store, cid, [cid])
    await _turns(conversation_store, 'x', ['x again'])
    listed = await conversation_store.list_conversations()
    assert [record.conversation_id for record in listed] == ['x', 'z', 'y']
    assert [record.conversation_id for record in await conversation_store.list_conversations(limit=2)] == ['x', 'z']
    assert await conversation_store.list_conversations(limit=0) == []


async def test_delete_releases_what_nothing_reaches_and_keeps_what_a_fork_does(
    conversation_store: ConversationStore,
) -> None:
    await _turns(conversation_store, 'c-1', ['one', 'two'])
    source = await conversation_store.load_entries('c-1')
    assert source is not None
    await conversation_store.fork('c-1', at=2, new_conversation_id='c-2')
    await conversation_store.delete('c-1')
    assert await conversation_store.load('c-1') is None
    forked = await conversation_store.load('c-2')
    assert forked is not None and forked.messages == [entry.message for entry in source[:2]]
    for entry in source[2:]:  # only the source reached these
        with pytest.raises(KeyError):
            await conversation_store.read_entry(entry.id)
    await conversation_store.delete('c-2')
    for entry in source[:2]:
        with pytest.raises(KeyError):
            await conversation_store.read_entry(entry.id)
    await conversation_store.delete('c-2')  # deleting what is gone is a no-op


async def test_delete_keeps_the_branches_a_conversation_left_until_it_goes(
    conversation_store: ConversationStore,
) -> None:
    last = await _turns(conversation_store, 'c-1', ['one', 'two'])
    old = await conversation_store.load_entries('c-1')
    assert old is not None
    await conversation_store.branch('c-1', at=0, expected_revision=last.revision)
    await _turns(conversation_store, 'c-other', ['unrelated'])
    assert (await conversation_store.read_entry(old[-1].id)).message == old[-1].message  # a branch keeps it
    await conversation_store.delete('c-1')
    with pytest.raises(KeyError):
        await conversation_store.read_entry(old[0].id)
    assert await conversation_store.load('c-other') is not None


async def test_deferred_tool_requests_round_trip(conversation_store: ConversationStore) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart('delete_file', {'path': '/srv/a.txt'}, tool_call_id='call-1')])

    output: list[type[str] | type[DeferredToolRequests]] = [str, DeferredToolRequests]
    agent = Agent(FunctionModel(model), output_type=output)

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        return f'deleted {path}'

    result = await agent.run('clean up', conversation=Conversation(conversation_id='c-1'))
    assert isinstance(result.output, DeferredToolRequests)
    await conversation_store.save(result)
    loaded = await conversation_store.load('c-1')
    assert loaded is not None
    assert loaded.deferred_tool_requests == result.conversation.deferred_tool_requests
    assert loaded.deferred_tool_requests is not None and loaded.deferred_tool_requests.approvals[0].args == {
        'path': '/srv/a.txt'
    }


async def test_read_history_matches_the_entry_by_entry_walk(conversation_store: ConversationStore) -> None:
    await _turns(conversation_store, 'c-1', ['one', 'two', 'three'])
    record = await conversation_store.read_record('c-1')
    assert record is not None
    for limit in (None, 0, 1, 3, 6, 10):
        walked = await ConversationStore.read_history(conversation_store, record.head_id, limit=limit)
        assert await conversation_store.read_history(record.head_id, limit=limit) == walked
    assert await conversation_store.read_history(None) == []
    with pytest.raises(KeyError):
        await conversation_store.read_entry('no-such-entry')
