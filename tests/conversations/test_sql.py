"""What only the SQL conversation stores have: tables, migrations, corrupt rows, configuration, sharing a database."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation

from durable_recall import PostgresStepStore, SqliteStepStore
from durable_recall.conversations import CorruptConversationError, PostgresConversationStore, SqliteConversationStore
from durable_recall.errors import StoreConfigurationError

from ._helpers import echo_agent
from .conftest import TABLES, ConversationKit

pytestmark = pytest.mark.anyio


async def _saved(kit: ConversationKit, cid: str = 'c-1') -> None:
    await kit.store.save(await echo_agent().run('hello', conversation=Conversation(conversation_id=cid)))


async def test_a_corrupt_entry_is_named_not_skipped(sql_conversation_kit: ConversationKit) -> None:
    kit = sql_conversation_kit
    await _saved(kit)
    (entry_id,) = (await kit.query('SELECT entry_id FROM {entries} WHERE parent_id IS NULL'))[0]
    await kit.query('UPDATE {entries} SET body = ? WHERE entry_id = ?', b'{"kind": "nonsense"}', entry_id)
    with pytest.raises(CorruptConversationError, match=f'entry {entry_id!r} is corrupt') as raised:
        await kit.store.load('c-1')
    assert raised.value.entry_id == entry_id
    await kit.query("UPDATE {entries} SET kind = 'vote' WHERE entry_id = ?", entry_id)
    with pytest.raises(CorruptConversationError, match="unknown entry kind 'vote'"):
        await kit.store.read_entry(entry_id)


async def test_a_corrupt_record_is_named(sql_conversation_kit: ConversationKit) -> None:
    kit = sql_conversation_kit
    await _saved(kit)
    await kit.query("UPDATE {records} SET usage = 'not json' WHERE conversation_id = 'c-1'")
    with pytest.raises(CorruptConversationError, match="the record of conversation 'c-1' is corrupt"):
        await kit.store.load('c-1')
    await kit.query("UPDATE {records} SET usage = '{{}}', format_version = 2 WHERE conversation_id = 'c-1'")
    with pytest.raises(CorruptConversationError, match='format version 2'):
        await kit.store.list_conversations()


async def test_tables_and_schema_version(sql_conversation_kit: ConversationKit) -> None:
    kit = sql_conversation_kit
    await _saved(kit)
    assert await kit.query("SELECT value FROM {meta} WHERE key = 'schema_version'") == [('5',)]
    # Version 2's index tables, by their durable names (compatibility data: renamed only by a migration).
    for name in TABLES:
        assert await kit.query(f'SELECT COUNT(*) FROM {{{name}}}') is not None
    assert len(await kit.query("SELECT value FROM {meta} WHERE key = 'index_generation'")) == 1
    await kit.query("UPDATE {meta} SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreConfigurationError, match='conversation schema version 99'):
        store = kit.reopen()
        await store.load('c-1')


async def test_sqlite_shares_a_file_with_the_step_store(tmp_path: Path) -> None:
    path = tmp_path / 'shared.db'
    steps = SqliteStepStore(database=path)
    conversations = SqliteConversationStore(database=path)
    await conversations.save(await echo_agent().run('hi', conversation=Conversation(conversation_id='c-1')))
    assert await steps.list_runs() == []
    assert await conversations.load('c-1') is not None
    with closing(sqlite3.connect(path)) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {'drc_meta', 'drc_records', 'drc_branches', 'drc_entries', 'dr_meta', 'dr_runs'} <= tables
    await steps.aclose()
    await conversations.aclose()


async def test_postgres_shares_a_schema_with_the_step_store(postgres_url: str, postgres_schema: str) -> None:
    from durable_recall import PostgresStepStore

    steps = PostgresStepStore(postgres_url, schema=postgres_schema)
    conversations = PostgresConversationStore(postgres_url, schema=postgres_schema)
    try:
        await conversations.save(await echo_agent().run('hi', conversation=Conversation(conversation_id='c-1')))
        assert await steps.list_runs() == []
        assert await conversations.load('c-1') is not None
    finally:
        await steps.aclose()
        await conversations.aclose()


async def test_postgres_with_a_caller_owned_pool(postgres_url: str, postgres_schema: str) -> None:
    from psycopg_pool import AsyncConnectionPool

    async with AsyncConnectionPool(postgres_url, kwargs={'autocommit': True}, open=False) as pool:
        store = PostgresConversationStore(pool=pool, schema=postgres_schema)
        await store.save(await echo_agent().run('hi', conversation=Conversation(conversation_id='c-1')))
        assert await store.load('c-1') is not None
        await store.aclose()  # never closes the caller's pool
        assert not pool.closed


def test_configuration_errors_name_the_bad_value(tmp_path: Path) -> None:
    with pytest.raises(StoreConfigurationError, match='either a `url` or a caller-owned `pool`'):
        PostgresConversationStore()
    with pytest.raises(StoreConfigurationError, match="'mysql://x' is not a usable Postgres URL"):
        PostgresConversationStore('mysql://x')
    with pytest.raises(StoreConfigurationError, match="schema '' is not a usable"):
        PostgresConversationStore('postgresql://localhost/db', schema='')
    with pytest.raises(StoreConfigurationError, match='max_size must be an int >= 1, got 0'):
        PostgresConversationStore('postgresql://localhost/db', max_size=0)
    assert 'hunter2' not in repr(PostgresConversationStore('postgresql://u:hunter2@localhost/db'))
    # One connector serves both stores; each names itself.
    with pytest.raises(StoreConfigurationError, match='^PostgresConversationStore: connect_timeout must be'):
        PostgresConversationStore('postgresql://localhost/db', connect_timeout=0)
    with pytest.raises(StoreConfigurationError, match='^PostgresStepStore: connect_timeout must be'):
        PostgresStepStore('postgresql://localhost/db', connect_timeout=0)
    with pytest.raises(StoreConfigurationError, match='^PostgresStepStore: max_size must be an int >= 1, got 0'):
        PostgresStepStore('postgresql://localhost/db', max_size=0)
    with pytest.raises(StoreConfigurationError, match='busy_timeout must be a number of seconds >= 0, got -1'):
        SqliteConversationStore(database=tmp_path / 'x.db', busy_timeout=-1)
    with pytest.raises(StoreConfigurationError, match='cannot use .* as a SQLite conversation store'):
        SqliteConversationStore(database=tmp_path / 'missing-dir' / 'x.db')
    not_sqlite = tmp_path / 'text.db'
    not_sqlite.write_text('hello, this is not a database' * 100)
    with pytest.raises(StoreConfigurationError):
        SqliteConversationStore(database=not_sqlite)


def test_importing_the_package_loads_no_driver() -> None:
    code = 'import sys, durable_recall.conversations as c; c.SqliteConversationStore; print("psycopg" in sys.modules)'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == 'False'
