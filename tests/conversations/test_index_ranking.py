"""Rankings of the persistent index against the exact BM25 oracle, and scoped sources, on SQLite and Postgres.

The persistent search index of our SQL conversation stores, caught up from the entry log, never
rebuilt per search; its answers must equal the in-memory path's (see `_index_kit`).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from durable_recall.conversations import ConversationStoreSource
from durable_recall.index import Bm25Params, record_text_terms
from durable_recall.search import SearchEngine, SearchRequest
from durable_recall.text import DEFAULT_SKIP_TOOLS, tokenize

from ..search._oracle import rank
from ._helpers import echo_agent
from ._index_kit import InMemory, Kit, answers, chat, engine

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize('query', ['alpha', 'bravo charlie delta', 'noted kilo', 'papa mike oscar lima'])
async def test_rankings_equal_the_exact_bm25_oracle(index_kit: Kit, query: str) -> None:
    kit = index_kit
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
    ranked = rank(
        tokenize(query),
        [Counter(text) for text in texts],
        [len(text) for text in texts],
        Bm25Params(),
        neighbours=Bm25Params().neighbours,
    )
    expected = [(*documents[index], score) for index, score in ranked]
    assert [(run_id, position) for run_id, position, _ in found] == [
        (run_id, position) for run_id, position, _ in expected
    ]
    assert [score for *_, score in found] == pytest.approx([score for *_, score in expected], rel=1e-9)
    assert outcome.total == len(documents)


async def test_a_scoped_source_sees_only_its_conversations(index_kit: Kit) -> None:
    kit = index_kit
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
