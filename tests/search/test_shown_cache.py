"""One cache of shown messages per engine: bounded in messages and characters, shared by its rankers.

Checks the bounds and the order messages leave in, that an answer keeps the messages it found
cached even when another search evicts them while it waits for the store, and that a
conversation's repeated searches read nothing once its messages are held, past the 256 messages a
conversation's ranker used to keep. (That a key is a run's registration, so that a run deleted
and saved again never shows what the deleted one held, is checked for every store in
`tests/security/test_reused_ids.py`.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from benchmarks._script import generate_conversation, make_queries
from benchmarks.histories import write_conversation
from pydantic_ai import messages as m

from durable_recall import ConversationSearch, SnapshotHistorySource
from durable_recall.search import SearchRequest
from durable_recall.search._reads import Reader
from durable_recall.search._shown import Shown, StoredMessage
from durable_recall.search._shown_cache import ShownCache
from durable_recall.stores import RunRecord, StepStore

from ._stub import context

pytestmark = pytest.mark.anyio

_AT = datetime(2026, 1, 1, tzinfo=UTC)


def _body(text: str) -> str:
    return m.ModelMessagesTypeAdapter.dump_json([_message(text)]).decode()[1:-1]


def _message(text: str) -> m.ModelMessage:
    return m.ModelRequest(parts=[m.UserPromptPart(text, timestamp=_AT)])


def _shown(text: str) -> Shown:
    return Shown.of(_body(text), summary=False)


class TestBounds:
    def test_least_recently_used_leaves_first_at_the_message_bound(self) -> None:
        cache = ShownCache(max_messages=2)
        a, b, c = _shown('a'), _shown('b'), _shown('c')
        cache.put('a', a)
        cache.put('b', b)
        assert cache.get('a') is a  # now the most recently used
        cache.put('c', c)
        assert ('a' in cache, 'b' in cache, 'c' in cache) == (True, False, True)

    def test_the_character_bound_holds_whatever_the_count(self) -> None:
        small = _shown('x')
        large = _shown('y' * 4000)
        bound = large.size + 2 * small.size - 1  # all three do not fit; two do
        cache = ShownCache(max_messages=100, max_characters=bound)
        cache.put('s1', small)
        cache.put('s2', small)
        cache.put('l', large)
        assert cache.characters <= bound
        assert 'l' in cache and 's1' not in cache  # the oldest made room
        assert cache.characters == sum(item.size for item in (large, small))

    def test_a_message_larger_than_the_bound_is_not_kept(self) -> None:
        small = _shown('x')
        cache = ShownCache(max_characters=small.size + 10)
        cache.put('small', small)
        cache.put('huge', _shown('z' * 500))
        assert 'huge' not in cache and 'small' in cache

    def test_putting_a_key_again_counts_it_once(self) -> None:
        cache = ShownCache()
        first, second = _shown('one'), _shown('two two')
        cache.put('k', first)
        cache.put('k', second)
        assert len(cache) == 1 and cache.characters == second.size and cache.get('k') is second

    def test_size_is_the_stored_characters(self) -> None:
        body = _body('hello')
        assert Shown.of(body, summary=False).size == len(body)
        assert Shown.of(_message('hello'), summary=False).size > 0  # an object: a nominal size


def _record(run_id: str) -> RunRecord:
    return RunRecord(run_id=run_id, conversation_id='c', started_at=_AT, token=f't-{run_id}')


class _SlowCorpus:
    """Reads wait for `release` when `hold` is set, so that another search runs meanwhile."""

    def __init__(self) -> None:
        self.hold = False
        self.waiting = anyio.Event()
        self.release = anyio.Event()
        self.reads: list[dict[str, list[int]]] = []

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        return {run_id: _record(run_id) for run_id in run_ids}

    async def read_stored(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, StoredMessage]]:
        self.reads.append({run_id: list(seqs) for run_id, seqs in wanted.items()})
        if self.hold:
            self.hold = False
            self.waiting.set()
            await self.release.wait()
        return {run_id: {seq: _body(f'{run_id} {seq}') for seq in seqs} for run_id, seqs in wanted.items()}


async def test_an_answer_keeps_what_it_found_cached_when_another_search_evicts_it() -> None:
    cache = ShownCache(max_messages=2)
    corpus = _SlowCorpus()
    one, other = Reader(corpus, cache=cache), Reader(corpus, cache=cache)  # pyright: ignore[reportArgumentType]
    keys = {'a': 1, 'b': 2}
    run_a, run_b = _record('a'), _record('b')
    await one.messages([(run_a, {0: 0})], keys=keys)  # a's message 0 is cached
    corpus.hold = True
    result: list[dict[int, Shown]] = []

    async def first() -> None:
        result.extend(await one.messages([(run_a, {0: 0, 1: 1})], keys=keys))  # 0 held, 1 read (waits)

    async with anyio.create_task_group() as group:
        group.start_soon(first)
        await corpus.waiting.wait()
        await other.messages([(run_b, {0: 0, 1: 1})], keys=keys)  # fills the cache: a's 0 is evicted
        assert (((('a', 't-a', 1), 0, False)) in cache) is False
        corpus.release.set()
    [shown] = result
    assert sorted(shown) == [0, 1], 'a message found cached was lost to an eviction during the read'
    assert shown[0].lines((), rarity=None, skip_tools=()) == ['User: a 0']


async def test_a_conversations_repeated_searches_read_nothing_once_held(store: StepStore) -> None:
    conversation = generate_conversation(5, 800, conversation_id='c-held')
    await write_conversation(store, conversation, window=12)
    method = 'read_log_bodies' if hasattr(store, 'read_log_bodies') else 'read_logs'
    original = getattr(store, method)
    reads: list[tuple[str, int]] = []

    async def counting(wanted: Mapping[str, Sequence[int]]) -> Any:
        reads.extend((run_id, seq) for run_id, seqs in wanted.items() for seq in seqs)
        return await original(wanted)

    setattr(store, method, counting)
    try:
        tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
        ctx = context(conversation_id='c-held')
        queries = make_queries(conversation, 40, 5)
        first = [await tool.search(ctx, SearchRequest(query=query)) for query in queries]
        held = len(set(reads))
        reads.clear()
        again = [await tool.search(ctx, SearchRequest(query=query)) for query in queries]
    finally:
        setattr(store, method, original)
    assert again == first
    assert held > 256  # more than a conversation's ranker kept before the cache was shared
    assert reads == [], 'a message shown before was read again although the cache had room'
