"""A huge query does not hold the event loop: other tasks keep running while it is searched.

Before the query was bounded, a 1 MB query of U+FDFA (which NFKC expands eighteen-fold) held the
loop for about 3.8 s on this 2-core machine; bounded, the longest gap a ticker task sees is a few
tens of milliseconds. The threshold is generous and the best of a few tries counts, so a loaded
machine does not fail the test, while a regression to seconds still does.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore, StepPersistence
from durable_recall.search import SearchRequest
from durable_recall.search._request import MAX_QUERY_BYTES, query_terms, search_text

from ._stub import context

pytestmark = pytest.mark.anyio

MAX_GAP = 0.25
"""Seconds the ticker may wait at most, in the best of `TRIES`."""

TRIES = 3

HUGE_QUERIES = {
    'nfkc-expanding': '\ufdfa' * (1_000_000 // 3),
    'cjk': '東京タワー' * (1_000_000 // 15),
    'one-word': 'x' * 1_000_000,
    'words': 'zeta ' * 200_000,
}


async def _max_gap_during(search: ConversationSearch, query: str) -> float:
    """The longest a ticker task waited between ticks while `query` was searched."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.002)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    answer = await search.search(context('c1'), SearchRequest(query=query))
    await asyncio.sleep(0.01)
    done.set()
    await ticker
    assert isinstance(answer, str) and answer
    return max(gaps)


@pytest.fixture
def anyio_backend() -> str:
    return 'asyncio'


@pytest.mark.parametrize('kind', sorted(HUGE_QUERIES))
async def test_a_megabyte_query_leaves_the_loop_free(kind: str, tmp_path: Path) -> None:
    store = SqliteStepStore(tmp_path / 'store.db')

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('zeta noted: ﷺ 東京タワー')])

    agent = Agent(FunctionModel(reply), name='seed', capabilities=[StepPersistence(store=store)])
    try:
        for number in range(3):
            await agent.run(f'turn {number} zeta 東京 é', conversation_id='c1')
        search = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
        await search.search(context('c1'), SearchRequest(query='zeta é 東京'))  # index, and the tokenizer's tables
        gaps = [await _max_gap_during(search, HUGE_QUERIES[kind]) for _ in range(TRIES)]
    finally:
        await store.aclose()
    assert min(gaps) < MAX_GAP, f'the event loop stalled {min(gaps) * 1000:.0f} ms (tries: {gaps})'


@pytest.mark.parametrize('query', sorted(HUGE_QUERIES.values(), key=len))
def test_the_query_is_bounded_before_it_is_tokenized(query: str) -> None:
    searched = search_text(query)
    assert len(searched.encode()) <= MAX_QUERY_BYTES
    assert query.startswith(searched.rstrip())
    assert len(query_terms(query)) <= 64


@pytest.mark.parametrize(
    ('query', 'searched'),
    [
        ('a' * (MAX_QUERY_BYTES - 3) + ' configuration', 'a' * (MAX_QUERY_BYTES - 3) + ' '),  # no half word
        ('é' * MAX_QUERY_BYTES, 'é' * (MAX_QUERY_BYTES // 2)),  # a cut never splits a character
        ('zeta\x00epsilon', 'zeta epsilon'),
        ('lone \ud800 surrogate', 'lone   surrogate'),
    ],
)
def test_how_a_query_is_cut(query: str, searched: str) -> None:
    assert search_text(query) == searched
