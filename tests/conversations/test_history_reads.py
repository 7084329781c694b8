"""`read_history` from any entry, not only a head: what pydantic-ai 2.78's save and branch ask of a store.

A save of a conversation that lost its stored marks (serialized, say) and whose run cleaned the
window it was sent (merged two adjacent requests) reads the entries *before* the window, from the
window's first entry's parent; `branch(from_entry=...)` reads the branches a conversation left. Our
stores override `read_history` with one recursive query, so it must start at whatever entry it is
given. Every test runs on core's in-memory store too, the reference.
"""

from __future__ import annotations

import pytest
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import ConversationStore
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from ._helpers import echo_agent, texts

pytestmark = pytest.mark.anyio


def _request(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(text)])


def _response(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


def _said(messages: list[ModelMessage]) -> list[str]:
    return [text.split(' (')[0] for text in texts(messages)]


async def _walk(store: ConversationStore, entry_id: str, limit: int | None = None) -> list[str]:
    """What the base class's entry-by-entry walk reads from `entry_id`: the reference for the one query."""
    return [entry.id for entry in await ConversationStore.read_history(store, entry_id, limit=limit)]


async def test_read_history_starts_at_any_entry(conversation_store: ConversationStore) -> None:
    store = conversation_store
    messages: list[ModelMessage] = []
    for word in ('alpha', 'bravo', 'charlie', 'delta'):
        messages += [_request(word), _response(word.upper())]
    await store.save(Conversation(conversation_id='c-1', messages=messages))
    entries = await store.load_entries('c-1')
    assert entries is not None and len(entries) == 8
    for index, entry in enumerate(entries):
        whole = await store.read_history(entry.id)
        assert [e.id for e in whole] == [e.id for e in entries[: index + 1]] == await _walk(store, entry.id)
        for limit in (1, 2, 5):
            window = await store.read_history(entry.id, limit=limit)
            assert [e.id for e in window] == [e.id for e in entries[max(0, index + 1 - limit) : index + 1]]
            assert [e.id for e in window] == await _walk(store, entry.id, limit)
    middle = await store.read_history(entries[4].id, limit=2)
    assert _said([e.message for e in middle]) == ['BRAVO', 'charlie']


async def test_read_history_reads_the_branches_a_conversation_left(conversation_store: ConversationStore) -> None:
    store = conversation_store
    agent = echo_agent()
    result = await agent.run('one ZEBRA', conversation=Conversation(conversation_id='c-1'))
    await store.save(result)
    for prompt in ('two', 'three'):
        loaded = await store.load('c-1')
        assert loaded is not None
        await store.save(await agent.run(prompt, conversation=loaded))
    left = await store.load_entries('c-1')
    assert left is not None
    loaded = await store.load('c-1')
    assert loaded is not None
    branched = await store.branch('c-1', at=2, expected_revision=loaded.revision)
    await store.save(await agent.run('two again', conversation=branched))
    record = await store.read_record('c-1')
    assert record is not None and record.branches == [left[-1].id]

    # The branch left, read from its tip and from inside it (the entries after the shared ones).
    assert [e.id for e in await store.read_history(record.branches[0])] == [e.id for e in left]
    assert [e.id for e in await store.read_history(left[3].id, limit=2)] == [left[2].id, left[3].id]
    # Back to an entry inside the branch left: the history up to it, and the live one becomes a branch.
    live = await store.load_entries('c-1')
    assert live is not None
    back = await store.branch('c-1', from_entry=left[3].id, expected_revision=record.revision)
    assert _said(back.messages) == ['one ZEBRA', 'noted: one ZEBRA', 'two', 'noted: two']
    record = await store.read_record('c-1')
    assert record is not None and record.head_id == left[3].id and record.branches == [left[-1].id, live[-1].id]


@pytest.mark.skipif(
    not hasattr(ConversationStore, 'write_details'),
    reason="pydantic-ai-slim>=2.78's save (before it, a cleaned window is saved as an edit, on every store)",
)
async def test_a_save_that_reads_back_before_its_window_appends(conversation_store: ConversationStore) -> None:
    # Stored: a history that ends in two requests in a row, which a run sends merged into one.
    store = conversation_store
    stored = [_request('one'), _response('ONE'), _request('two'), _response('TWO'), _request('three')]
    stored.append(_request('four'))
    await store.save(Conversation(conversation_id='c-1', messages=stored))
    window = await store.load('c-1', limit=2)
    assert window is not None and _said(window.messages) == ['three', 'four']
    result = await echo_agent().run('five', conversation=window)
    # Serialized and read back: the save no longer knows which messages are stored, so it compares the
    # window it was sent (cleaned: one merged request) with the stored one, reading back from the
    # entry before that window to find out that cleaning, not an edit, made them differ.
    copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(result.conversation))
    assert copy.new_message_index == 1 and len(copy.messages[0].parts) == 2
    new = await store.save(copy)
    assert len(new) == 2
    record = await store.read_record('c-1')
    assert record is not None and record.branches == []  # appended, not branched off as an edit
    loaded = await store.load('c-1')
    assert loaded is not None
    assert _said(loaded.messages) == ['one', 'ONE', 'two', 'TWO', 'three', 'four', 'five', 'noted: three']
