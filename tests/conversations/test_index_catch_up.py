"""Catching up: a cold process, branches, rewrites, forks, deletes and corrupt entries, on SQLite and Postgres.

The persistent search index of our SQL conversation stores, caught up from the entry log, never
rebuilt per search; its answers must equal the in-memory path's (see `_index_kit`).
"""

from __future__ import annotations

import random
import sqlite3
from contextlib import closing

import pytest
from pydantic_ai.conversation import ConversationTypeAdapter

from durable_recall.conversations import ConversationStoreSource
from durable_recall.search import SearchRequest

from ._helpers import echo_agent
from ._index_kit import Kit, answers, chat, engine, same_as_in_memory, scope_docs
from .conftest import ConversationKit, close_store

pytestmark = pytest.mark.anyio


async def test_a_cold_process_answers_from_the_index_without_reading_conversations(index_kit: Kit) -> None:
    kit = index_kit
    rng = random.Random(7)
    writer = kit.open()
    conversations = [f'c-{n}' for n in range(6)]
    for cid in conversations:
        await chat(writer, cid, 8, rng)
    first = await answers(engine(ConversationStoreSource(kit.open())), conversations)

    cold = kit.open()
    search = engine(ConversationStoreSource(cold))
    outcome = await search.rank(SearchRequest(query='alpha bravo'), scope='all', conversation_id=None)
    assert outcome.hits and cold.counts.histories == 0  # the in-memory path reads every history
    # Only the windows the answer shows are read back (4 matches, a message either side): never 96 entries.
    assert 0 < cold.counts.bodies <= 4 * 3
    assert await answers(search, conversations) == first
    assert cold.counts.histories == 0
    cold.counts.bodies = 0
    cold.counts.read.clear()

    # One save appends two entries: catch-up reads exactly those two bodies, nothing else.
    await chat(writer, 'c-3', 1, rng)
    outcome = await search.rank(SearchRequest(query='zulu'), scope='all', conversation_id=None)
    assert outcome.fixed is not None and outcome.fixed.startswith('No matches')
    record = await writer.read_record('c-3')
    assert record is not None and record.head_id is not None
    newest = [entry.id for entry in (await writer.read_history(record.head_id))[-2:]]
    assert sorted(cold.counts.read) == sorted(newest)
    assert cold.counts.histories == 0
    assert await answers(search, conversations) == await same_as_in_memory(kit.open(), conversations)


async def test_branches_rewrites_forks_and_deletes_answer_as_the_in_memory_path(index_kit: Kit) -> None:
    kit = index_kit
    rng = random.Random(11)
    store = kit.open()
    search = engine(ConversationStoreSource(kit.open()))  # a long-lived process catching up
    conversations = ['a', 'b']
    await chat(store, 'a', 5, rng)
    await chat(store, 'b', 3, rng)
    assert await answers(search, conversations) == await same_as_in_memory(store, conversations)

    loaded = await store.load('a')
    assert loaded is not None
    branched = await store.branch('a', at=4, expected_revision=loaded.revision)  # regenerate from turn two
    await store.save(await echo_agent().run('kilo kilo oscar regenerated', conversation=branched))
    await chat(store, 'a', 2, rng)
    assert await answers(search, conversations) == await same_as_in_memory(store, conversations)

    forked = await store.fork('a', at=3, new_conversation_id='c')
    await store.save(await echo_agent().run('papa papa fork', conversation=forked))
    conversations.append('c')
    assert await answers(search, conversations) == await same_as_in_memory(store, conversations)

    loaded = await store.load('b')
    assert loaded is not None
    # Serialized and read back, then with its history cut and a new turn: a save that rewrote it.
    copy = ConversationTypeAdapter.validate_json(ConversationTypeAdapter.dump_json(loaded))
    copy.messages = copy.messages[:2]
    await store.save(await echo_agent().run('mike november rewritten', conversation=copy))
    assert await answers(search, conversations) == await same_as_in_memory(store, conversations)

    await store.delete('a')
    conversations.remove('a')
    assert await answers(search, [*conversations, 'a']) == await same_as_in_memory(store, [*conversations, 'a'])
    cold = engine(ConversationStoreSource(kit.open()))
    assert await answers(cold, [*conversations, 'a']) == await same_as_in_memory(store, [*conversations, 'a'])
    if kit.sqlite_path is not None:
        with closing(sqlite3.connect(kit.sqlite_path)) as conn:
            traces = conn.execute(
                "SELECT (SELECT COUNT(*) FROM drc_runs WHERE conversation_id = 'a')"
                " + (SELECT COUNT(*) FROM drc_index_scopes WHERE conversation_id = 'a')"
                " + (SELECT COUNT(*) FROM drc_index_runs WHERE run_id = 'a' OR run_id LIKE 'a#%')"
                " + (SELECT COUNT(*) FROM drc_index_conversations WHERE conversation_id = 'a')"
                " + (SELECT COUNT(*) FROM drc_pending WHERE conversation_id = 'a')"
            ).fetchone()[0]
        assert traces == 0  # a deleted conversation leaves no searchable trace


async def test_a_conversation_deleted_while_it_is_caught_up_leaves_no_trace(index_kit: Kit) -> None:
    kit = index_kit
    store = kit.open()
    await chat(store, 'doomed', 4, random.Random(2))
    await chat(store, 'kept', 2, random.Random(4))
    reader = kit.open()

    async def delete() -> None:
        await store.delete('doomed')

    reader.counts.after_runs = delete  # lands after catch-up listed the runs, before it reads them
    search = engine(ConversationStoreSource(reader))
    answer = await search.search(SearchRequest(query='noted'), scope='all', conversation_id=None)
    assert 'could not be read' not in answer and 'doomed' not in answer and 'run: kept' in answer
    assert await answers(search, ['doomed', 'kept']) == await same_as_in_memory(kit.open(), ['doomed', 'kept'])
    assert await scope_docs(kit, 'doomed') == 0


async def test_a_corrupt_entry_is_named_in_the_answer_not_raised(sql_conversation_kit: ConversationKit) -> None:
    kit = sql_conversation_kit
    rng = random.Random(9)
    await chat(kit.store, 'hurt', 3, rng)
    await chat(kit.store, 'fine', 3, rng)
    (entry_id,) = (await kit.query('SELECT entry_id FROM {entries} WHERE parent_id IS NULL ORDER BY entry_id'))[0]
    await kit.query('UPDATE {entries} SET body = ? WHERE entry_id = ?', b'{"kind": "nonsense"}', entry_id)
    reader = kit.reopen()
    try:
        answer = await engine(ConversationStoreSource(reader)).search(
            SearchRequest(query='noted'), scope='all', conversation_id=None
        )
    finally:
        await close_store(reader)
    assert 'could not be read' in answer and entry_id in answer
    assert 'matches for' in answer  # the conversation that reads is still searched
