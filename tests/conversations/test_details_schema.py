"""Conversation schema version 5 (a conversation's `title` and `metadata`): pinned, and migrated into in place.

A database a version 4 store wrote (the columns it had, the rows it wrote) is opened by this
release on both dialects: it is migrated to version 5 on first use with every conversation, entry
and branch intact and untitled, ends with the columns a fresh database has, and takes titles.
Version 4 is made from rows this release wrote by dropping what version 5 added: migrations 1 to 4
are never edited, so that is the file a version 4 store leaves.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore

from durable_recall.conversations._migrations import POSTGRES_MIGRATIONS, SCHEMA_VERSION, SQLITE_MIGRATIONS

from ._helpers import echo_agent
from .conftest import ConversationKit, close_store
from .test_details import HAS_DETAILS

pytestmark = pytest.mark.anyio


def test_version_5_is_pinned() -> None:
    # Compatibility data: a released migration is never edited, only followed by a new one.
    assert SCHEMA_VERSION == 5
    assert SQLITE_MIGRATIONS[4] == (
        'ALTER TABLE drc_records ADD COLUMN title TEXT',
        'ALTER TABLE drc_records ADD COLUMN metadata TEXT',
    )
    assert POSTGRES_MIGRATIONS[4] == (
        'ALTER TABLE {records} ADD COLUMN title TEXT COLLATE "C"',
        'ALTER TABLE {records} ADD COLUMN metadata TEXT',
    )


async def _columns(kit: ConversationKit) -> list[tuple[Any, ...]]:
    """The records table's columns as the database describes them (name, type, nullability, collation)."""
    if kit.sqlite_path is not None:
        return [tuple(row[1:4]) for row in await kit.query('PRAGMA table_info(drc_records)')]
    return await kit.query(
        'SELECT column_name, data_type, is_nullable, collation_name FROM information_schema.columns'
        " WHERE table_schema = ? AND table_name = 'drc_records' ORDER BY ordinal_position",
        kit.postgres_schema,
    )


async def _snapshot(store: ConversationStore) -> dict[str, Any]:
    """Every conversation as stored: its record (but the details) and its entries, and its branches' entries."""
    out: dict[str, Any] = {}
    for record in await store.list_conversations():
        history = await store.read_history(record.head_id)
        branches = [await store.read_history(tip) for tip in record.branches]
        fields = (record.head_id, record.scope, record.revision, record.updated_at, record.usage, record.forked_from)
        out[record.conversation_id] = (fields, record.branches, history, branches)
    return out


async def test_a_version_4_database_upgrades_in_place(sql_conversation_kit: ConversationKit) -> None:
    kit = sql_conversation_kit
    store, agent = kit.store, echo_agent()
    result = await agent.run('one ZEBRA', conversation=Conversation(conversation_id='c-1'))
    await store.save(result, scope='alice')
    fresh = await _columns(kit)  # a database this release made
    for prompt in ('two', 'three'):
        loaded = await store.load('c-1')
        assert loaded is not None
        await store.save(await agent.run(prompt, conversation=loaded))
    loaded = await store.load('c-1')
    assert loaded is not None
    branched = await store.branch('c-1', at=2, expected_revision=loaded.revision)
    await store.save(await agent.run('two again', conversation=branched))
    await store.fork('c-1', at=4, new_conversation_id='c-2', scope='bob')
    before = await _snapshot(store)
    assert len(before) == 2 and before['c-1'][1] != []
    await close_store(store)

    # What a version 4 store leaves: no detail columns, version 4.
    for column in ('title', 'metadata'):
        await kit.query(f'ALTER TABLE {{records}} DROP COLUMN {column}')
    await kit.query("UPDATE {meta} SET value = '4' WHERE key = 'schema_version'")
    assert [column[0] for column in await _columns(kit)][-2:] == ['deferred', 'format_version']

    upgraded = kit.reopen()
    try:
        assert await _snapshot(upgraded) == before
        assert await kit.query("SELECT value FROM {meta} WHERE key = 'schema_version'") == [('5',)]
        assert await _columns(kit) == fresh
        for record in await upgraded.list_conversations():
            assert getattr(record, 'title', None) is None and getattr(record, 'metadata', None) is None
        if HAS_DETAILS:
            titled = await upgraded.update('c-1', title='QUAGGA', metadata={'migrated': True}, expected_title=None)
            assert (titled.title, titled.metadata) == ('QUAGGA', {'migrated': True})
        loaded = await upgraded.load('c-1')
        assert loaded is not None
        await upgraded.save(await agent.run('after the upgrade', conversation=loaded))
        after = await upgraded.read_record('c-1')
        assert after is not None and after.branches == before['c-1'][1]
        if HAS_DETAILS:
            assert after.title == 'QUAGGA'
    finally:
        await close_store(upgraded)
