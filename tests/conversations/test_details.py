"""pydantic-ai 2.78's conversation details (`title`, `metadata`, `update`, `write_details`) on core's store and ours.

Every test runs on `InMemoryConversationStore` (the reference), `SqliteConversationStore` and
`PostgresConversationStore`, so ours provably behave like core's; the SQL-only checks (what a
row holds, values a JSON column cannot keep) take `sql_conversation_kit`.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict, ConversationStore
from pydantic_ai.exceptions import UserError

from ._helpers import echo_agent, texts
from .conftest import ConversationKit, close_store

HAS_DETAILS = hasattr(ConversationStore, 'write_details')
"""pydantic-ai-slim>=2.78: `ConversationStore.update`/`write_details`, `ConversationRecord.title`/`metadata`."""

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not HAS_DETAILS, reason='conversation titles and metadata need pydantic-ai-slim>=2.78'),
]


async def _saved(store: ConversationStore, conversation_id: str = 'c-1', prompt: str = 'hello') -> Conversation:
    loaded = await store.load(conversation_id) or Conversation(conversation_id=conversation_id)
    result = await echo_agent().run(prompt, conversation=loaded)
    await store.save(result)
    return result.conversation


async def test_update_sets_title_and_metadata_and_a_save_never_undoes_it(conversation_store: ConversationStore) -> None:
    store = conversation_store
    await _saved(store)
    before = await store.load('c-1')  # loaded before the update: its save must neither conflict nor undo it
    assert before is not None
    record = await store.read_record('c-1')
    assert record is not None and record.title is None and record.metadata is None

    updated = await store.update('c-1', title='ZEBRA crossing', metadata={'model': 'quokka', 'n': [1, 2.5, None]})
    assert (updated.title, updated.metadata) == ('ZEBRA crossing', {'model': 'quokka', 'n': [1, 2.5, None]})
    assert (updated.revision, updated.updated_at) == (record.revision, record.updated_at)  # not a save

    await store.save(await echo_agent().run('again', conversation=before))
    after = await store.read_record('c-1')
    assert after is not None and after.revision != record.revision
    assert (after.title, after.metadata) == ('ZEBRA crossing', {'model': 'quokka', 'n': [1, 2.5, None]})
    (listed,) = await store.list_conversations()
    assert (listed.title, listed.metadata) == (after.title, after.metadata)
    reopened = await store.load('c-1')
    assert reopened is not None and texts(reopened.messages)[-2] == 'again'


async def test_update_changes_only_what_is_passed_and_none_clears(conversation_store: ConversationStore) -> None:
    store = conversation_store
    await _saved(store)
    await store.update('c-1', title='first', metadata={'a': 1})
    assert (await store.update('c-1', metadata={'b': 2})).title == 'first'  # metadata replaced whole, title kept
    record = await store.update('c-1', title='second')
    assert (record.title, record.metadata) == ('second', {'b': 2})
    record = await store.update('c-1', title=None)
    assert (record.title, record.metadata) == (None, {'b': 2})
    record = await store.update('c-1', metadata=None)
    assert (record.title, record.metadata) == (None, None)
    assert await store.update('c-1') == await store.read_record('c-1')  # nothing to change: the record as stored


async def test_expected_title_is_a_compare_and_set(conversation_store: ConversationStore) -> None:
    store = conversation_store
    await _saved(store)
    # An agent titling a conversation passes expected_title=None: it never replaces a title.
    assert (await store.update('c-1', title='agent title', expected_title=None)).title == 'agent title'
    with pytest.raises(ConversationConflict, match="titled 'agent title', not None") as raised:
        await store.update('c-1', title='another agent title', metadata={'lost': True}, expected_title=None)
    assert raised.value.conversation_id == 'c-1'
    record = await store.read_record('c-1')
    assert record is not None and (record.title, record.metadata) == ('agent title', None)  # nothing written
    # The user renames it from what they saw.
    assert (await store.update('c-1', title='user title', expected_title='agent title')).title == 'user title'
    with pytest.raises(ConversationConflict):
        await store.update('c-1', title='stale rename', expected_title='agent title')
    with pytest.raises(ConversationConflict):  # a check alone conflicts too
        await store.update('c-1', expected_title='agent title')
    assert (await store.update('c-1', expected_title='user title')).title == 'user title'
    assert (await store.update('c-1', title=None, expected_title='user title')).title is None


async def test_update_of_a_conversation_the_store_does_not_have(conversation_store: ConversationStore) -> None:
    store = conversation_store
    with pytest.raises(UserError, match="'nope' is not in the store"):
        await store.update('nope', title='x')
    await _saved(store)
    await store.save(await echo_agent().run('mine', conversation=Conversation(conversation_id='c-2')), scope='alice')
    with pytest.raises(UserError, match="'c-2' is not in the store"):
        await store.update('c-2', title='not yours', scope='bob')
    assert (await store.update('c-2', title='yours', scope='alice')).title == 'yours'
    await store.delete('c-2')
    await store.save(await echo_agent().run('anew', conversation=Conversation(conversation_id='c-2')))
    record = await store.read_record('c-2')
    assert record is not None and record.title is None  # a conversation made again starts untitled


async def test_write_details_checks_revision_and_expected_values(conversation_store: ConversationStore) -> None:
    store = conversation_store
    await _saved(store)
    record = await store.read_record('c-1')
    assert record is not None
    written = await store.write_details(
        'c-1', {'title': 'ZEBRA'}, expected_revision=record.revision, expected={'title': None}
    )
    assert (written.title, written.metadata, written.revision) == ('ZEBRA', None, record.revision)
    with pytest.raises(ConversationConflict):  # the title is no longer unset
        await store.write_details(
            'c-1', {'title': 'other'}, expected_revision=record.revision, expected={'title': None}
        )
    await _saved(store, prompt='a new turn')
    with pytest.raises(ConversationConflict):  # saved since: the revision moved on
        await store.write_details('c-1', {'metadata': {'k': 'v'}}, expected_revision=record.revision)
    with pytest.raises(ConversationConflict):
        await store.write_details('gone', {'title': 'x'}, expected_revision=record.revision)
    current = await store.read_record('c-1')
    assert current is not None and (current.title, current.metadata) == ('ZEBRA', None)
    written = await store.write_details(
        'c-1', {'metadata': {'k': 'v'}}, expected_revision=current.revision, expected={'metadata': None}
    )
    assert (written.title, written.metadata) == ('ZEBRA', {'k': 'v'})
    with pytest.raises(ConversationConflict):
        await store.write_details(
            'c-1', {'metadata': {'k': 'w'}}, expected_revision=current.revision, expected={'metadata': {'k': 'x'}}
        )
    written = await store.write_details(
        'c-1', {'metadata': {'k': 'w'}}, expected_revision=current.revision, expected={'metadata': {'k': 'v'}}
    )
    assert written.metadata == {'k': 'w'} and written.updated_at == current.updated_at
    # Nothing to write: still an answer only for the record as expected.
    same = await store.write_details('c-1', {}, expected_revision=current.revision, expected={'title': 'ZEBRA'})
    assert (same.title, same.metadata, same.revision) == ('ZEBRA', {'k': 'w'}, current.revision)
    with pytest.raises(ConversationConflict):
        await store.write_details('c-1', {}, expected_revision=current.revision, expected={'title': None})


async def test_updates_of_different_fields_at_once_both_land(conversation_kit: ConversationKit) -> None:
    await _saved(conversation_kit.store)
    other = conversation_kit.reopen()  # another connection (SQLite) or pool (Postgres) on the same database
    try:
        for round_ in range(5):
            await asyncio.gather(
                conversation_kit.store.update('c-1', title=f'title {round_}'),
                other.update('c-1', metadata={'round': round_}),
            )
            record = await conversation_kit.store.read_record('c-1')
            assert record is not None and (record.title, record.metadata) == (f'title {round_}', {'round': round_})
    finally:
        if other is not conversation_kit.store:
            await close_store(other)


async def test_a_fork_starts_untitled_and_the_original_keeps_its_title(conversation_store: ConversationStore) -> None:
    store = conversation_store
    await _saved(store)
    await store.update('c-1', title='original', metadata={'x': 1})
    fork = await store.fork('c-1', new_conversation_id='c-2')
    forked = await store.read_record(fork.conversation_id)
    assert forked is not None and (forked.title, forked.metadata) == (None, None)
    loaded = await store.load('c-1')
    assert loaded is not None
    branched = await store.branch('c-1', at=1, expected_revision=loaded.revision)
    record = await store.read_record('c-1')
    assert record is not None and record.revision == branched.revision and record.title == 'original'


async def test_sql_rows_hold_the_title_and_canonical_metadata(sql_conversation_kit: ConversationKit) -> None:
    kit = sql_conversation_kit
    await _saved(kit.store)
    await kit.store.update('c-1', title='ZEBRA', metadata={'b': {'y': 1, 'x': 2}, 'a': 'é'})
    assert await kit.query("SELECT title, metadata FROM {records} WHERE conversation_id = 'c-1'") == [
        ('ZEBRA', '{"a":"é","b":{"x":2,"y":1}}')
    ]
    # Equal metadata in another key order matches the stored one in a compare-and-set.
    record = await kit.store.read_record('c-1')
    assert record is not None
    written = await kit.store.write_details(
        'c-1',
        {'title': 'QUAGGA'},
        expected_revision=record.revision,
        expected={'metadata': {'a': 'é', 'b': {'x': 2, 'y': 1}}},
    )
    assert written.title == 'QUAGGA'


async def test_sql_stores_refuse_what_they_cannot_keep(sql_conversation_kit: ConversationKit) -> None:
    store = sql_conversation_kit.store
    await _saved(store)
    record = await store.read_record('c-1')
    assert record is not None
    with pytest.raises(UserError, match='only JSON values'):
        await store.update('c-1', metadata={'when': object()})
    with pytest.raises(UserError, match='read back as written'):
        await store.update('c-1', metadata={1: 'int key'})  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match='must be a dict or None'):
        await store.update('c-1', metadata=['not', 'a', 'dict'])  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match='title must be a string or None'):
        await store.update('c-1', title=42)  # pyright: ignore[reportArgumentType]
    with pytest.raises(NotImplementedError, match="no conversation detail 'colour'"):
        await store.write_details('c-1', {'colour': 'red'}, expected_revision=record.revision)  # pyright: ignore[reportArgumentType]
    after = await store.read_record('c-1')
    assert after is not None and (after.title, after.metadata) == (None, None)
