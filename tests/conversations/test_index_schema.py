"""The persistent index's tables (pinned), a version 1 file migrated and indexed, and which sources use it.

The persistent search index of our SQL conversation stores is kept in the store's own database:
its table names and schema version are compatibility data (SQLite shows them; the Postgres
migrations are the same list), a file from before the index gets it on first use, and only our
stores' sources with branches searched read it (any other source keeps the in-memory path).
"""

from __future__ import annotations

import random
import sqlite3
import struct
from contextlib import closing
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation

from durable_recall.conversations import ConversationStoreSource, SqliteConversationStore
from durable_recall.conversations._migrations import SQLITE_META, SQLITE_MIGRATIONS
from durable_recall.index import OPEN, decode_chunk
from durable_recall.search import SearchRequest

from ._helpers import echo_agent
from ._index_kit import chat, engine

pytestmark = pytest.mark.anyio


async def test_the_index_tables_are_pinned(tmp_path: Path) -> None:
    path = tmp_path / 'pinned.db'
    store = SqliteConversationStore(path)
    try:
        await store.save(await echo_agent().run('hello', conversation=Conversation(conversation_id='c-1')))
        await engine(ConversationStoreSource(store)).search(
            SearchRequest(query='hello'), scope='conversation', conversation_id='c-1'
        )
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert conn.execute("SELECT value FROM drc_meta WHERE key = 'schema_version'").fetchone() == ('5',)
        indexed = conn.execute('SELECT run_id, seen FROM drc_index_runs').fetchall()
    assert tables == {
        'drc_meta',
        'drc_records',
        'drc_branches',
        'drc_entries',
        'drc_runs',
        'drc_index_conversations',
        'drc_pending',
        'drc_index_scopes',
        'drc_index_runs',
        'drc_index_postings',
        'drc_index_hashes',
    }
    assert indexed == [('c-1', 2)]


async def test_a_version_1_file_is_migrated_and_its_conversations_indexed(tmp_path: Path) -> None:
    # Rows written by a store, copied into a file that holds only conversation schema version 1.
    written = tmp_path / 'written.db'
    store = SqliteConversationStore(written)
    try:
        await chat(store, 'old-1', 4, random.Random(1))
        loaded = await store.load('old-1')
        assert loaded is not None
        await store.save(await echo_agent().run('remember juliet zulu', conversation=loaded))
    finally:
        await store.aclose()
    old = tmp_path / 'v1.db'
    with closing(sqlite3.connect(old, isolation_level=None)) as conn:
        conn.execute(SQLITE_META)
        for statement in SQLITE_MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("INSERT INTO drc_meta (key, value) VALUES ('schema_version', '1')")
        conn.execute('ATTACH DATABASE ? AS written', (str(written),))
        for table in ('drc_branches', 'drc_entries'):
            conn.execute(f'INSERT INTO {table} SELECT * FROM written.{table}')
        columns = ', '.join(row[1] for row in conn.execute('PRAGMA table_info(drc_records)'))
        conn.execute(f'INSERT INTO drc_records SELECT {columns} FROM written.drc_records')
        conn.execute('DETACH DATABASE written')

    upgraded = SqliteConversationStore(old)
    try:
        answer = await engine(ConversationStoreSource(upgraded)).search(
            SearchRequest(query='zulu'), scope='conversation', conversation_id='old-1'
        )
    finally:
        await upgraded.aclose()
    assert 'remember juliet zulu' in answer
    with closing(sqlite3.connect(old)) as conn:
        assert conn.execute("SELECT value FROM drc_meta WHERE key = 'schema_version'").fetchone() == ('5',)
        assert conn.execute('SELECT run_id, seen FROM drc_index_runs').fetchall() == [('old-1', 10)]


async def test_a_version_2_index_is_rebuilt_in_version_3s_postings_layout(tmp_path: Path) -> None:
    # Version 3 packs open tails of postings as varints; version 2 packed three 32-bit ints a posting,
    # which decode as varints into other postings without an error: the index must be rebuilt.
    path = tmp_path / 'v2.db'
    store = SqliteConversationStore(path)
    try:
        await chat(store, 'old-1', 4, random.Random(1))
        loaded = await store.load('old-1')
        assert loaded is not None
        await store.save(await echo_agent().run('remember juliet zulu', conversation=loaded))
        before = await engine(ConversationStoreSource(store)).search(
            SearchRequest(query='juliet zulu'), scope='conversation', conversation_id='old-1'
        )
    finally:
        await store.aclose()
    with closing(sqlite3.connect(path)) as conn, conn:
        tails = conn.execute('SELECT scope_key, term, postings FROM drc_index_postings WHERE chunk = 0').fetchall()
        for scope_key, term, data in tails:
            old = b''.join(
                struct.pack('<III', key >> 32, key & 0xFFFFFFFF, tf | length << 16)
                for key, tf, length in decode_chunk(OPEN, data).entries()
            )
            conn.execute(
                'UPDATE drc_index_postings SET postings = ? WHERE scope_key = ? AND term = ? AND chunk = 0',
                (old, scope_key, term),
            )
        conn.execute("UPDATE drc_meta SET value = '2' WHERE key = 'schema_version'")
        for column in ('title', 'metadata'):  # what version 5 adds
            conn.execute(f'ALTER TABLE drc_records DROP COLUMN {column}')

    upgraded = SqliteConversationStore(path)
    try:
        after = await engine(ConversationStoreSource(upgraded)).search(
            SearchRequest(query='juliet zulu'), scope='conversation', conversation_id='old-1'
        )
    finally:
        await upgraded.aclose()
    assert 'remember juliet zulu' in before
    assert after == before
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM drc_meta WHERE key = 'schema_version'").fetchone() == ('5',)


async def test_other_stores_and_options_keep_the_in_memory_path(tmp_path: Path) -> None:
    from pydantic_ai.conversation_store import InMemoryConversationStore

    from durable_recall.search._conversation_corpus import ConversationCorpus
    from durable_recall.search._engine import corpus_for
    from durable_recall.search._source_corpus import SourceCorpus

    ours = SqliteConversationStore(tmp_path / 'ours.db')
    try:
        assert isinstance(corpus_for(ConversationStoreSource(ours)), ConversationCorpus)
        assert isinstance(corpus_for(ConversationStoreSource(ours, scope='tenant')), ConversationCorpus)
        assert isinstance(corpus_for(ConversationStoreSource(ours, branches=False)), SourceCorpus)
    finally:
        await ours.aclose()
    assert isinstance(corpus_for(ConversationStoreSource(InMemoryConversationStore())), SourceCorpus)
