"""The persistent search index of our SQL conversation stores: caught up from the entry log, never rebuilt per search.

Each test runs on SQLite and Postgres. "The in-memory path" is the same `ConversationStoreSource`
behind a plain `HistorySource` wrapper, which `SearchEngine` indexes in memory (`SourceCorpus`,
itself checked against the exact BM25 oracle): every answer of the persistent path must be the
same string. A counting store fails a test that re-reads what it must not.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from pydantic_ai.conversation import Conversation, ConversationTypeAdapter
from pydantic_ai.conversation_store import ConversationEntry, ConversationStore

from durable_recall.base import RunRecord
from durable_recall.conversations import (
    ConversationStoreSource,
    LogRun,
    PostgresConversationStore,
    SqliteConversationStore,
)
from durable_recall.conversations._migrations import SQLITE_META, SQLITE_MIGRATIONS
from durable_recall.conversations.postgres import PostgresEntryLog
from durable_recall.conversations.sqlite import SqliteEntryLog
from durable_recall.history import RunHistory
from durable_recall.index import Bm25Params, record_text_terms
from durable_recall.search import SearchEngine, SearchRequest
from durable_recall.text import DEFAULT_SKIP_TOOLS, tokenize

from ..search._oracle import rank
from ._helpers import echo_agent
from .conftest import ConversationKit, close_store

pytestmark = pytest.mark.anyio

_ROOT = Path(__file__).resolve().parents[2]
WORDS = [
    'alpha',
    'bravo',
    'charlie',
    'delta',
    'echo',
    'foxtrot',
    'golf',
    'hotel',
    'india',
    'juliet',
    'kilo',
    'lima',
    'mike',
    'november',
    'oscar',
    'papa',
]
QUERIES = ['alpha', 'bravo charlie', 'delta echo foxtrot', 'kilo oscar', 'noted messages', 'papa lima golf', 'zulu']


@dataclass
class Counts:
    """What a store was asked to read: histories (the in-memory path's reads) and entry bodies (the index's)."""

    histories: int = 0
    bodies: int = 0
    read: list[str] = field(default_factory=list[str])
    after_runs: Callable[[], Awaitable[None]] | None = None
    """Called once, after the index's first read of its runs (a concurrent change landing mid-catch-up)."""

    async def ran(self) -> None:
        hook, self.after_runs = self.after_runs, None
        if hook is not None:
            await hook()


class CountingSqliteLog(SqliteEntryLog):
    def __init__(self, log: SqliteEntryLog, counts: Counts) -> None:
        super().__init__(log.connection)
        self.counts = counts

    async def entries(self, entry_ids: Sequence[str]) -> dict[str, ConversationEntry]:
        found = await super().entries(entry_ids)
        self.counts.bodies += len(found)
        self.counts.read += found
        return found

    async def runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        found = await super().runs(run_ids)
        await self.counts.ran()
        return found


class CountingSqlite(SqliteConversationStore):
    counts: Counts

    def entry_log(self) -> SqliteEntryLog:
        return CountingSqliteLog(super().entry_log(), self.counts)

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        self.counts.histories += 1
        return await super().read_history(head_id, limit=limit)


class CountingPostgresLog(PostgresEntryLog):
    def __init__(self, log: PostgresEntryLog, counts: Counts) -> None:
        super().__init__(log.connector)
        self.counts = counts

    async def entries(self, entry_ids: Sequence[str]) -> dict[str, ConversationEntry]:
        found = await super().entries(entry_ids)
        self.counts.bodies += len(found)
        self.counts.read += found
        return found

    async def runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        found = await super().runs(run_ids)
        await self.counts.ran()
        return found


class CountingPostgres(PostgresConversationStore):
    counts: Counts

    def entry_log(self) -> PostgresEntryLog:
        return CountingPostgresLog(super().entry_log(), self.counts)

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        self.counts.histories += 1
        return await super().read_history(head_id, limit=limit)


Store = CountingSqlite | CountingPostgres


@dataclass
class Kit:
    """Opens stores on one database, each a cold process's: a new store object with counters of its own."""

    opener: Callable[[], Store]
    sqlite_path: Path | None
    opened: list[Store] = field(default_factory=list[Store])

    def open(self) -> Store:
        store = self.opener()
        store.counts = Counts()
        self.opened.append(store)
        return store


@pytest.fixture(params=['sqlite', pytest.param('postgres', marks=pytest.mark.postgres)])
async def kit(request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str) -> AsyncIterator[Kit]:
    if request.param == 'sqlite':
        path = tmp_path / 'conversations.db'
        made = Kit(lambda: CountingSqlite(path), path)
    else:
        url: str = request.getfixturevalue('postgres_url')
        schema: str = request.getfixturevalue('postgres_schema')
        made = Kit(lambda: CountingPostgres(url, schema=schema), None)
    try:
        yield made
    finally:
        for store in made.opened:
            await store.aclose()


class InMemory:
    """The same source behind a plain `HistorySource`: the engine indexes it in memory."""

    def __init__(self, source: ConversationStoreSource) -> None:
        self._source = source

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        return await self._source.list_runs(conversation_id=conversation_id)

    async def run_history(self, run_id: str) -> RunHistory | None:
        return await self._source.run_history(run_id)


def engine(source: ConversationStoreSource | InMemory) -> SearchEngine:
    return SearchEngine(
        source=source,
        params=Bm25Params(),
        max_matches=4,
        context_lines=1,
        max_result_bytes=6_000,
        skip_tools=DEFAULT_SKIP_TOOLS,
    )


async def answers(search: SearchEngine, conversations: Sequence[str], *, all_scopes: bool = True) -> list[str]:
    out: list[str] = []
    for query in QUERIES:
        for order in ('relevance', 'newest'):
            if all_scopes:
                out.append(
                    await search.search(SearchRequest(query=query, order=order), scope='all', conversation_id=None)
                )
            for cid in conversations:
                request = SearchRequest(query=query, order=order)
                out.append(await search.search(request, scope='conversation', conversation_id=cid))
    return out


async def chat(store: ConversationStore, cid: str, turns: int, rng: random.Random, *, scope: str | None = None) -> None:
    agent = echo_agent()
    for _ in range(turns):
        prompt = ' '.join(rng.choice(WORDS) for _ in range(rng.randint(2, 7)))
        conversation = await store.load(cid) or Conversation(conversation_id=cid)
        await store.save(await agent.run(prompt, conversation=conversation), scope=scope)


async def same_as_in_memory(store: Store, conversations: Sequence[str], *, all_scopes: bool = True) -> list[str]:
    persistent = await answers(engine(ConversationStoreSource(store)), conversations, all_scopes=all_scopes)
    expected = await answers(engine(InMemory(ConversationStoreSource(store))), conversations, all_scopes=all_scopes)
    assert persistent == expected
    return persistent


async def test_a_cold_process_answers_from_the_index_without_reading_conversations(kit: Kit) -> None:
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


async def test_branches_rewrites_forks_and_deletes_answer_as_the_in_memory_path(kit: Kit) -> None:
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


async def test_two_processes_catching_up_one_conversation_index_it_once(kit: Kit) -> None:
    rng = random.Random(3)
    writer = kit.open()
    await chat(writer, 'shared', 30, rng)
    first, second = kit.open(), kit.open()
    results: dict[int, list[str]] = {}

    async def search(n: int, store: Store) -> None:
        results[n] = await answers(engine(ConversationStoreSource(store)), ['shared'], all_scopes=False)

    async with anyio.create_task_group() as group:
        group.start_soon(search, 1, first)
        group.start_soon(search, 2, second)
    expected = await same_as_in_memory(kit.open(), ['shared'], all_scopes=False)
    assert results[1] == results[2] == expected
    docs = await _scope_docs(kit, 'shared')
    assert docs == 60  # every message once: an indexing race that doubled postings would count them twice

    # Again with appends landing while both catch up.
    async def save_more() -> None:
        await chat(writer, 'shared', 5, rng)

    async with anyio.create_task_group() as group:
        group.start_soon(save_more)
        group.start_soon(search, 1, first)
        group.start_soon(search, 2, second)
    final = await same_as_in_memory(kit.open(), ['shared'], all_scopes=False)
    assert await answers(engine(ConversationStoreSource(first)), ['shared'], all_scopes=False) == final
    assert await _scope_docs(kit, 'shared') == 70


async def test_a_scoped_source_sees_only_its_conversations(kit: Kit) -> None:
    rng = random.Random(5)
    store = kit.open()
    await chat(store, 'alice-1', 4, rng, scope='alice')
    await chat(store, 'bob-1', 4, rng, scope='bob')
    alice = ConversationStoreSource(store, scope='alice')
    persistent = engine(alice)
    in_memory = engine(InMemory(alice))
    assert await answers(persistent, ['alice-1', 'bob-1']) == await answers(in_memory, ['alice-1', 'bob-1'])
    request = SearchRequest(query='alpha', run_id='bob-1')
    bob_run = await persistent.search(request, scope='conversation', conversation_id='bob-1')
    assert bob_run == await in_memory.search(request, scope='conversation', conversation_id='bob-1')
    assert 'noted' not in bob_run


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
        assert conn.execute("SELECT value FROM drc_meta WHERE key = 'schema_version'").fetchone() == ('2',)
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


async def _scope_docs(kit: Kit, cid: str) -> int:
    store = kit.open()
    assert isinstance(store, SqliteConversationStore | PostgresConversationStore)
    log = store.entry_log()
    if isinstance(log, SqliteEntryLog):
        from durable_recall.stores.sqlite import SqliteIndex

        status = await SqliteIndex(log.connection, prefix='drc_').status(cid, all_scopes=False)
    else:
        from durable_recall.stores.postgres import PostgresIndex

        status = await PostgresIndex(log.connector).status(cid, all_scopes=False)
    assert not status.pending
    return status.docs


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
        for table in ('drc_records', 'drc_branches', 'drc_entries'):
            conn.execute(f'INSERT INTO {table} SELECT * FROM written.{table}')
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
        assert conn.execute("SELECT value FROM drc_meta WHERE key = 'schema_version'").fetchone() == ('2',)
        assert conn.execute('SELECT run_id, seen FROM drc_index_runs').fetchall() == [('old-1', 10)]


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


def _search_in_processes(kit: ConversationKit, tmp_path: Path, cid: str, go: Path) -> list[subprocess.Popen[str]]:
    location = str(kit.sqlite_path) if kit.sqlite_path is not None else str(kit.postgres_url)
    command = [sys.executable, '-m', 'tests.conversations._search_worker', kit.backend, location]
    command += [kit.postgres_schema or '-', cid, str(go), *QUERIES]
    workers = [subprocess.Popen(command, cwd=_ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == 'ready'
    return workers


async def test_two_os_processes_catching_up_one_conversation(
    sql_conversation_kit: ConversationKit, tmp_path: Path
) -> None:
    kit = sql_conversation_kit
    await chat(kit.store, 'shared', 40, random.Random(13))
    go = tmp_path / 'go'
    workers = _search_in_processes(kit, tmp_path, 'shared', go)
    try:
        go.touch()  # both cold, both find the conversation unindexed, both catch it up
        outputs = [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0]
    in_memory = engine(InMemory(ConversationStoreSource(kit.store)))
    expected = [
        await in_memory.search(SearchRequest(query=query), scope='conversation', conversation_id='shared')
        for query in QUERIES
    ]
    assert outputs[0] == outputs[1] == expected
    indexed = await kit.query("SELECT docs FROM {index_scopes} WHERE conversation_id = 'shared'")
    assert indexed == [(80,)]  # every message once
    assert await kit.query('SELECT COUNT(*) FROM {index_runs}') == [(1,)]
    assert await kit.query('SELECT COUNT(*) FROM {pending}') == [(0,)]


@pytest.mark.parametrize('query', ['alpha', 'bravo charlie delta', 'noted kilo', 'papa mike oscar lima'])
async def test_rankings_equal_the_exact_bm25_oracle(kit: Kit, query: str) -> None:
    rng = random.Random(17)
    store = kit.open()
    await chat(store, 'c-1', 10, rng)
    loaded = await store.load('c-1')
    assert loaded is not None
    branched = await store.branch('c-1', at=6, expected_revision=loaded.revision)
    await store.save(await echo_agent().run('golf hotel india regenerated', conversation=branched))
    await chat(store, 'c-1', 3, rng)
    await chat(store, 'c-2', 4, rng)

    source = ConversationStoreSource(kit.open())
    search = SearchEngine(
        source=source,
        params=Bm25Params(),
        max_matches=1_000,
        context_lines=0,
        max_result_bytes=10_000_000,
        skip_tools=DEFAULT_SKIP_TOOLS,
    )
    outcome = await search.rank(SearchRequest(query=query), scope='conversation', conversation_id='c-1')
    found = [(hit.candidate.run_id, hit.candidate.position, hit.candidate.score) for hit in outcome.hits]

    documents: list[tuple[str, int]] = []
    texts: list[list[str]] = []
    for run in await source.list_runs(conversation_id='c-1'):  # corpus order: oldest first message first
        history = await source.run_history(run.run_id)
        assert history is not None
        for position, message in enumerate(history.messages):
            documents.append((run.run_id, position))
            texts.append(record_text_terms(message))
    record = await store.read_record('c-1')
    assert record is not None and {run_id for run_id, _ in documents} == {'c-1', f'c-1#branch:{record.branches[0]}'}
    ranked = rank(tokenize(query), [Counter(text) for text in texts], [len(text) for text in texts], Bm25Params())
    expected = [(*documents[index], score) for index, score in ranked]
    assert [(run_id, position) for run_id, position, _ in found] == [
        (run_id, position) for run_id, position, _ in expected
    ]
    assert [score for *_, score in found] == pytest.approx([score for *_, score in expected], rel=1e-9)
    assert outcome.total == len(documents)


async def test_a_conversation_deleted_while_it_is_caught_up_leaves_no_trace(kit: Kit) -> None:
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
    assert await _scope_docs(kit, 'doomed') == 0


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
