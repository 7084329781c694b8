"""The store's persistent index answers exactly as an in-memory index of the same records, on every store.

Realistic histories (the benchmark generator: tool calls, code, logs, paths, runs threaded through
`message_history`, sliding-window compaction) are written as `StepPersistence` writes them. The same
queries then go to a `ConversationSearch` over `SnapshotHistorySource` (the store's index, caught up
from snapshots by resuming each run's fold) and to one over a plain wrapper of the same source (the
engine's other corpus: whole records, diffed by version, indexed in memory): answers must be
identical, character for character, whatever the scope, filters and order, after catching up in
one go or a bit at a time, in a warm process or a cold one, and after a conversation is deleted.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from benchmarks._script import generate_conversation, make_queries
from benchmarks.histories import write_conversation

from durable_recall import ConversationSearch, SnapshotHistorySource, update_index
from durable_recall.history import RunHistory
from durable_recall.index import Indexer
from durable_recall.search import SearchRequest
from durable_recall.stores import RunRecord, StepStore

from ._stub import context

pytestmark = pytest.mark.anyio


class Plain:
    """A `HistorySource` that is not a `SnapshotHistorySource`: the engine indexes its records in memory."""

    def __init__(self, store: StepStore) -> None:
        self._inner = SnapshotHistorySource(store)

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        return await self._inner.list_runs(conversation_id=conversation_id)

    async def run_history(self, run_id: str) -> RunHistory | None:
        return await self._inner.run_history(run_id)


def requests(queries: list[str], run_id: str) -> list[SearchRequest]:
    out = [SearchRequest(query=query) for query in queries]
    out += [
        SearchRequest(query=queries[0], run_id=run_id),
        SearchRequest(query=queries[1], roles=['tool']),
        SearchRequest(query=queries[2], roles=['user', 'assistant'], order='newest'),
        SearchRequest(query=queries[3], order='oldest'),
        SearchRequest(query=queries[1], since='2026-01-01T00:00:00Z'),
        SearchRequest(query='', run_id=run_id),
        SearchRequest(query='zzzz-not-anywhere'),
        SearchRequest(query=queries[0], run_id='no-such-run'),
    ]
    return out


async def agree(store: StepStore, conversation_id: str, asks: list[SearchRequest], **options: Any) -> list[str]:
    """Ask both paths, assert equal answers; returns the index's answers."""
    indexed = ConversationSearch(SnapshotHistorySource(store), **options)
    plain = ConversationSearch(Plain(store), **options)
    ctx = context(conversation_id=conversation_id)
    answers: list[str] = []
    for ask in asks:
        expected = await plain.search(ctx, ask)
        got = await indexed.search(ctx, ask)
        assert got == expected, ask
        answers.append(got)
    return answers


async def test_answers_equal_the_in_memory_corpus(store: StepStore) -> None:
    first = generate_conversation(11, 160, conversation_id='c-one')
    second = generate_conversation(12, 120, conversation_id='c-two')
    for conversation in (first, second):
        await write_conversation(store, conversation, window=12)
    asks = requests(make_queries(first, 8, 11), first.runs[2].run_id)
    answers = await agree(store, 'c-one', asks, scope='conversation', context_lines=2)
    assert any(answer.startswith('10 matches') or 'matches for' in answer for answer in answers)
    await agree(store, 'c-one', asks, scope='all', context_lines=0, max_matches=25)
    await agree(store, 'c-two', requests(make_queries(second, 4, 12), second.runs[1].run_id), scope='conversation')


async def test_catching_up_bit_by_bit_equals_catching_up_once(store: StepStore) -> None:
    conversation = generate_conversation(21, 200, conversation_id='c-grow')
    queries = make_queries(conversation, 6, 21)
    warm = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    ctx = context(conversation_id='c-grow')
    runs = conversation.runs
    for end in (1, 3, len(runs) // 2, len(runs)):
        await write_conversation(store, conversation.__class__(conversation.conversation_id, runs[:end]), window=10)
        for query in queries:
            plain = await ConversationSearch(Plain(store), scope='conversation').search(ctx, SearchRequest(query=query))
            assert await warm.search(ctx, SearchRequest(query=query)) == plain
    cold = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    for query in queries:
        assert await cold.search(ctx, SearchRequest(query=query)) == await warm.search(ctx, SearchRequest(query=query))


async def test_a_cold_process_reads_no_snapshot(store: StepStore) -> None:
    conversation = generate_conversation(31, 120, conversation_id='c-cold')
    await write_conversation(store, conversation, window=12)
    ctx = context(conversation_id='c-cold')
    query = make_queries(conversation, 1, 31)[0]
    expected = await ConversationSearch(SnapshotHistorySource(store), scope='conversation').search(
        ctx, SearchRequest(query=query)
    )
    reads: list[str] = []
    original = store.list_snapshots

    async def counting(run_id: str, **kwargs: Any) -> Any:
        reads.append(run_id)
        return await original(run_id, **kwargs)

    store.list_snapshots = counting
    try:
        cold = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
        assert await cold.search(ctx, SearchRequest(query=query)) == expected
    finally:
        del store.list_snapshots
    assert reads == []


async def test_deleting_a_conversation_removes_it_from_the_index(store: StepStore) -> None:
    gone = generate_conversation(41, 80, conversation_id='c-gone')
    kept = generate_conversation(42, 80, conversation_id='c-kept')
    for conversation in (gone, kept):
        await write_conversation(store, conversation, window=12)
    query = make_queries(gone, 1, 41)[0]
    search = ConversationSearch(SnapshotHistorySource(store), scope='all', max_matches=50)
    before = await search.search(context(conversation_id='c-gone'), SearchRequest(query=query))
    assert 'conversation: c-gone' in before
    await store.delete_conversation('c-gone')
    after = await search.search(context(conversation_id='c-gone'), SearchRequest(query=query))
    assert 'c-gone' not in after
    gone_scope = await ConversationSearch(SnapshotHistorySource(store), scope='conversation').search(
        context(conversation_id='c-gone'), SearchRequest(query=query)
    )
    assert gone_scope == await ConversationSearch(Plain(store), scope='conversation').search(
        context(conversation_id='c-gone'), SearchRequest(query=query)
    )
    await agree(store, 'c-kept', requests(make_queries(kept, 4, 42), kept.runs[0].run_id), scope='all')


async def test_update_index_leaves_nothing_for_the_first_search(store: StepStore) -> None:
    conversation = generate_conversation(51, 60, conversation_id='c-batch')
    await write_conversation(store, conversation, window=12)
    await write_conversation(store, generate_conversation(52, 30, conversation_id='c-other'), window=12)
    storage = store.index_storage()
    assert (await storage.status('c-batch', all_scopes=False)).pending
    assert await update_index(store, 'c-batch') == []
    assert (await storage.status('c-batch', all_scopes=False)).pending == []
    assert (await storage.status('c-other', all_scopes=False)).pending
    assert await update_index(store) == []
    assert (await storage.status(None, all_scopes=True)).pending == []


@pytest.mark.parametrize('budget', [2_048, 3_000, 4_000])
async def test_answers_agree_when_the_byte_budget_cuts_them(store: StepStore, budget: int) -> None:
    # The index reads the windows of only as many hits as fit; the blocks, the count left out and
    # the closing line must still be the in-memory corpus's, whichever batch the budget ends in.
    conversation = generate_conversation(13, 200, conversation_id='c-budget')
    await write_conversation(store, conversation, window=12)
    asks = [SearchRequest(query=query) for query in make_queries(conversation, 8, 13)]
    answers = await agree(store, 'c-budget', asks, scope='conversation', max_result_bytes=budget)
    assert any('left out to keep this result under' in answer for answer in answers)


async def test_concurrent_catch_ups_of_the_same_runs_index_each_once(store: StepStore) -> None:
    # Two workers catch the same pending runs up at once: one batch commits, the other finds a run
    # indexed meanwhile, commits nothing of its batch, and catches its runs up one by one.
    conversation = generate_conversation(61, 150, conversation_id='c-race')
    await write_conversation(store, conversation, window=12)
    indexers = [Indexer.of_store(store), Indexer.of_store(store)]
    pending = (await store.index_storage().status('c-race', all_scopes=False)).pending
    assert len(pending) > 2
    async with anyio.create_task_group() as group:
        for indexer in indexers:
            group.start_soon(indexer.catch_up, pending)
    status = await store.index_storage().status('c-race', all_scopes=False)
    assert status.pending == []
    assert status.docs == sum(run.message_count for run in conversation.runs)
    await agree(
        store, 'c-race', requests(make_queries(conversation, 6, 61), conversation.runs[1].run_id), scope='conversation'
    )


async def test_a_batch_that_loses_a_race_catches_its_runs_up_one_by_one(store: StepStore) -> None:
    conversation = generate_conversation(62, 120, conversation_id='c-lost')
    await write_conversation(store, conversation, window=12)
    pending = (await store.index_storage().status('c-lost', all_scopes=False)).pending
    loser, winner = Indexer.of_store(store), Indexer.of_store(store)
    prepare = loser._prepare
    fallbacks: list[list[str]] = []
    one_by_one = loser._one_by_one

    async def late(run: Any, row: Any, held: Any) -> Any:
        change = await prepare(run, row, held)
        if run.run_id == pending[-1]:
            await winner.catch_up(pending)  # another worker indexes them all before this batch commits
        return change

    async def counted(run_ids: list[str]) -> Any:
        fallbacks.append(run_ids)
        return await one_by_one(run_ids)

    loser._prepare = late
    loser._one_by_one = counted
    assert await loser.catch_up(pending) == []

    assert fallbacks == [pending]
    assert (await store.index_storage().status('c-lost', all_scopes=False)).pending == []
    await agree(
        store, 'c-lost', requests(make_queries(conversation, 6, 62), conversation.runs[1].run_id), scope='conversation'
    )


async def test_numpy_columns_answer_as_the_python_scorer(store: StepStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # A common term's postings are decoded into numpy columns and scored with array arithmetic
    # (`index._columns`, `index._array_scoring`) from `MIN_ROWS` rows on, a size these histories never
    # reach: with the bar at one row, every term takes that path, and every answer must be the
    # Python scorer's, character for character (scores, ties, filters, orders, one run's record).
    from durable_recall.index import _array_scoring, _columns, _scoring

    first = generate_conversation(71, 240, conversation_id='c-columns')
    await write_conversation(store, first, window=12)
    await write_conversation(store, generate_conversation(72, 120, conversation_id='c-beside'), window=12)
    asks = requests(make_queries(first, 10, 71), first.runs[3].run_id)
    ctx = context(conversation_id='c-columns')
    vectorised = _array_scoring.vector_top_scores
    calls: list[int] = []

    def counted(*args: Any) -> Any:
        calls.append(1)
        return vectorised(*args)

    for scope in ('conversation', 'all'):
        python = ConversationSearch(SnapshotHistorySource(store), scope=scope, context_lines=1)
        expected = [await python.search(ctx, ask) for ask in asks]
        assert calls == []
        with monkeypatch.context() as patched:
            patched.setattr(_columns, 'MIN_ROWS', 1)
            patched.setattr(_scoring, 'vector_top_scores', counted)
            columns = ConversationSearch(SnapshotHistorySource(store), scope=scope, context_lines=1)
            assert [await columns.search(ctx, ask) for ask in asks] == expected
            # Again in the same process: from its cached columns and their memoised shares.
            assert [await columns.search(ctx, ask) for ask in asks] == expected
        assert calls
        calls.clear()
        assert any('matches for' in answer for answer in expected)


def test_a_small_store_is_searched_without_numpy(tmp_path: Any) -> None:
    # numpy costs 0.1 to 0.3 s to import: only a term of `MIN_ROWS` rows or more loads it, which
    # a conversation of a few hundred messages never has, so its searches stay off it.
    import subprocess
    import sys

    code = f"""
import asyncio, sys
from benchmarks._script import generate_conversation, make_queries
from benchmarks.histories import write_conversation
from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore
from durable_recall.search import SearchRequest
from tests.search._stub import context

async def main():
    store = SqliteStepStore({str(tmp_path / 'small.db')!r})
    conversation = generate_conversation(81, 300, conversation_id='c-small')
    await write_conversation(store, conversation, window=12)
    # Every word searched, the commonest too (`stopwords=()`): even those stay under `MIN_ROWS`.
    search = ConversationSearch(SnapshotHistorySource(store), scope='conversation', stopwords=())
    for query in make_queries(conversation, 8, 81):
        answer = await search.search(context(conversation_id='c-small'), SearchRequest(query=query))
        assert answer.split(' ', 1)[0].isdigit(), answer[:200]
    await store.aclose()
    print('numpy' in sys.modules)

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == 'False'


def test_a_first_search_keeps_to_python_and_a_later_one_imports_numpy(tmp_path: Any) -> None:
    # Importing numpy costs more than a one-off search of a common word: a process's first search
    # decodes such a word into Python chunks (without keeping them); its next search reads it
    # again into numpy columns. With the bar at one row, every word is common.
    import subprocess
    import sys

    code = f"""
import asyncio, sys
from benchmarks._script import generate_conversation, make_queries
from benchmarks.histories import write_conversation
from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore
from durable_recall.index import _columns
from durable_recall.search import SearchRequest
from tests.search._stub import context

async def main():
    store = SqliteStepStore({str(tmp_path / 'first.db')!r})
    conversation = generate_conversation(91, 200, conversation_id='c-first')
    await write_conversation(store, conversation, window=12)
    ctx = context(conversation_id='c-first')
    queries = make_queries(conversation, 6, 91)
    plain = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    expected = [await plain.search(ctx, SearchRequest(query=query)) for query in queries]
    _columns.MIN_ROWS = 1
    search = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    found = [await search.search(ctx, SearchRequest(query=queries[0]))]
    print('numpy' in sys.modules)
    found += [await search.search(ctx, SearchRequest(query=query)) for query in [*queries[1:], queries[0]]]
    print('numpy' in sys.modules)
    assert found == [*expected, expected[0]]
    await store.aclose()

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ['False', 'True']


def test_building_the_first_engine_of_a_process_collects_garbage_once() -> None:
    # The full collection a fresh process owes after its imports runs at startup (`_warm_up`),
    # not inside its first search; a second engine does not run another.
    import subprocess
    import sys

    code = """
import gc
from durable_recall import ConversationSearch, InMemoryStepStore, SnapshotHistorySource

def full_collections():
    return gc.get_stats()[2]['collections']

before = full_collections()
ConversationSearch(SnapshotHistorySource(InMemoryStepStore()), scope='conversation')
first = full_collections()
ConversationSearch(SnapshotHistorySource(InMemoryStepStore()), scope='conversation')
print(first - before, full_collections() - first)
"""
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ['1', '0']
