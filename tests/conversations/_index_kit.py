"""Counting conversation stores and search helpers for the persistent index tests (`test_index_*`).

"The in-memory path" is the same `ConversationStoreSource` behind a plain `HistorySource` wrapper
(`InMemory`), which `SearchEngine` indexes in memory (`SourceCorpus`, itself checked against the
exact BM25 oracle): every answer of the persistent path must be the same string. A counting store
(`Kit.open`: a cold process's store, with counters of its own) fails a test that re-reads what it
must not.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationEntry, ConversationStore

from durable_recall.base import RunRecord
from durable_recall.conversations import (
    ConversationStoreSource,
    LogRun,
    PostgresConversationStore,
    SqliteConversationStore,
)
from durable_recall.conversations.postgres import PostgresEntryLog
from durable_recall.conversations.sqlite import SqliteEntryLog
from durable_recall.history import RunHistory
from durable_recall.index import Bm25Params
from durable_recall.search import SearchEngine, SearchRequest
from durable_recall.text import DEFAULT_SKIP_TOOLS

from ._helpers import echo_agent

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

    def bodies_read(self, found: dict[str, ConversationEntry]) -> dict[str, ConversationEntry]:
        """Count the entry bodies an entry log read, and pass them on."""
        self.bodies += len(found)
        self.read += found
        return found

    async def runs_read(self, found: dict[str, LogRun]) -> dict[str, LogRun]:
        """Run the `after_runs` hook the first time an entry log read runs, and pass them on."""
        hook, self.after_runs = self.after_runs, None
        if hook is not None:
            await hook()
        return found


class CountingSqliteLog(SqliteEntryLog):
    def __init__(self, log: SqliteEntryLog, counts: Counts) -> None:
        super().__init__(log.connection)
        self.counts = counts

    async def entries(self, entry_ids: Sequence[str]) -> dict[str, ConversationEntry]:
        return self.counts.bodies_read(await super().entries(entry_ids))

    async def runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        return await self.counts.runs_read(await super().runs(run_ids))


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
        return self.counts.bodies_read(await super().entries(entry_ids))

    async def runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        return await self.counts.runs_read(await super().runs(run_ids))


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


async def scope_docs(kit: Kit, cid: str) -> int:
    """The documents the index holds for `cid` (with nothing pending): each message counts once."""
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
