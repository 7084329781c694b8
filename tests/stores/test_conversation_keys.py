"""Conversation keys (schema version 15): a current key per conversation, rotation, deletion with the conversation.

The journal codecs encrypt engine payloads with these keys; what makes the engines' copies
unreadable is that `erase_conversation` and `prune_idle` delete them, which these tests pin on
every store, and that `JournalCipher` then names the key as erased.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from durable_recall.errors import ConversationKeyErasedError, JournalPayloadError, StoreConfigurationError
from durable_recall.stores import (
    ConversationKeyStore,
    JournalCipher,
    SqliteStepStore,
    conversation_of,
    erase_conversation,
    prune_idle,
)
from tests._services.stores import StoreKit

from ._helpers import registration

pytestmark = pytest.mark.anyio


def keys_of(kit: StoreKit) -> ConversationKeyStore:
    store = kit.store
    assert isinstance(store, ConversationKeyStore)
    return store


async def test_one_key_per_conversation_made_once_even_when_asked_at_once(kit: StoreKit) -> None:
    keys = keys_of(kit)
    made: list[str] = []

    async def ask() -> None:
        made.append((await keys.conversation_key('c')).key_id)

    async with anyio.create_task_group() as group:
        for _ in range(8):
            group.start_soon(ask)
    assert len(set(made)) == 1
    key = await keys.conversation_key('c')
    assert (key.key_id, key.conversation_id, key.version, len(key.secret)) == (made[0], 'c', 1, 32)
    assert key.secret not in repr(key).encode() and 'secret' not in repr(key)
    other = await keys.conversation_key('d')
    assert other.key_id != key.key_id and other.secret != key.secret


async def test_rotation_makes_a_new_current_key_and_old_ones_keep_decrypting(kit: StoreKit) -> None:
    keys = keys_of(kit)
    cipher = JournalCipher(keys, key_cache_seconds=0)
    old_id, old_sealed = await cipher.seal('c', b'before rotation')
    rotated = await keys.rotate_conversation_key('c')
    assert rotated.version == 2 and (await keys.conversation_key('c')).key_id == rotated.key_id
    new_id, _ = await cipher.seal('c', b'after rotation')
    assert new_id == rotated.key_id != old_id
    assert (await cipher.open(old_id, old_sealed))[1] == b'before rotation'
    # Retiring the old keys: what they sealed is then unreadable, the current key stays.
    assert await keys.delete_conversation_keys('c', below_version=2) == 1
    with pytest.raises(ConversationKeyErasedError):
        await cipher.open(old_id, old_sealed)
    assert (await keys.conversation_key('c')).key_id == rotated.key_id


async def test_erasing_a_conversation_deletes_its_keys_and_only_its_own(kit: StoreKit) -> None:
    keys = keys_of(kit)
    await kit.store.register_run(registration('r1', conversation_id='gone'))
    await kit.store.register_run(registration('r2', conversation_id='kept'))
    cipher = JournalCipher(keys, key_cache_seconds=0)
    gone_id, gone_sealed = await cipher.seal('gone', b'forget me')
    await keys.rotate_conversation_key('gone')
    kept_id, kept_sealed = await cipher.seal('kept', b'keep me')
    assert (await cipher.open(gone_id, gone_sealed))[1] == b'forget me'

    if kit.backend == 'memory':
        await kit.store.delete_conversation('gone')  # the memory store does not scrub, so it has no erase_conversation
    else:
        await erase_conversation(kit.store, 'gone')

    assert await keys.conversation_key_by_id(gone_id) is None
    with pytest.raises(ConversationKeyErasedError) as raised:
        await cipher.open(gone_id, gone_sealed)
    assert raised.value.key_id == gone_id and 'erased' in str(raised.value)
    assert (await cipher.open(kept_id, kept_sealed))[1] == b'keep me'


async def test_a_conversation_with_keys_but_no_runs_loses_them_too(sql_kit: StoreKit) -> None:
    keys = keys_of(sql_kit)
    key = await keys.conversation_key('workflow-only')
    await erase_conversation(sql_kit.store, 'workflow-only')
    assert await keys.conversation_key_by_id(key.key_id) is None


async def test_pruning_an_idle_conversation_deletes_its_keys(sql_kit: StoreKit) -> None:
    keys = keys_of(sql_kit)
    await sql_kit.store.register_run(registration('r1', conversation_id='idle'))
    key = await keys.conversation_key('idle')
    pruned = await prune_idle(sql_kit.store, idle_for=timedelta(days=1), now=datetime.now(UTC) + timedelta(days=2))
    assert pruned.deleted == {'idle': 1}
    assert await keys.conversation_key_by_id(key.key_id) is None


async def test_a_cached_key_opens_until_forgotten(kit: StoreKit) -> None:
    keys = keys_of(kit)
    cipher = JournalCipher(keys, key_cache_seconds=3600)
    key_id, sealed = await cipher.seal('c', b'cached')
    await keys.delete_conversation_keys('c')
    # The documented window: this process cached the key, and keeps it until the cache expires.
    assert (await cipher.open(key_id, sealed))[1] == b'cached'
    cipher.forget('c')
    with pytest.raises(ConversationKeyErasedError):
        await cipher.open(key_id, sealed)


async def test_an_altered_or_moved_payload_is_named_not_misread(kit: StoreKit) -> None:
    keys = keys_of(kit)
    cipher = JournalCipher(keys, key_cache_seconds=0)
    key_id, sealed = await cipher.seal('c', b'payload')
    other_id, _ = await cipher.seal('d', b'other')
    altered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    for bad_id, bad in [(key_id, altered), (other_id, sealed), (key_id, sealed[:10])]:
        with pytest.raises(JournalPayloadError) as raised:
            await cipher.open(bad_id, bad)
        assert not isinstance(raised.value, ConversationKeyErasedError)


def test_the_cipher_refuses_a_store_without_keys_and_a_negative_cache() -> None:
    with pytest.raises(StoreConfigurationError, match='keeps no conversation keys'):
        JournalCipher(object())  # pyright: ignore[reportArgumentType]
    with pytest.raises(StoreConfigurationError, match='key_cache_seconds'):
        JournalCipher(SqliteStepStore(':memory:'), key_cache_seconds=-1)


def test_conversation_of_reads_attributes_and_serialized_run_contexts() -> None:
    class Named:
        conversation_id = 'a'

    class Saved:
        conversation = Named()

    class Operation:
        serialized_run_context = {'conversation_id': 'b', 'run_id': 'r'}

    class Refusing:
        def __getattr__(self, name: str) -> object:
            raise RuntimeError(f'{name} is not available here')

    assert [conversation_of(value) for value in (Named(), Saved(), Operation(), 'text', None, Refusing())] == [
        'a',
        'a',
        'b',
        None,
        None,
        None,
    ]


async def test_the_sqlite_key_table_is_pinned(tmp_path: object) -> None:
    # Compatibility data: the codecs' key ids point into this table.
    from pathlib import Path

    path = Path(str(tmp_path)) / 'store.db'
    store = SqliteStepStore(path)
    try:
        key = await store.conversation_key('c')
    finally:
        await store.aclose()
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            'SELECT key_id, conversation_id, version, length(secret) FROM dr_conversation_keys'
        ).fetchall()
        columns = [row[1] for row in conn.execute('PRAGMA table_info(dr_conversation_keys)')]
    assert rows == [(key.key_id, 'c', 1, 32)]
    assert columns == ['key_id', 'conversation_id', 'version', 'secret', 'created_at']
