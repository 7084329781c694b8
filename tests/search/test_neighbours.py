"""Neighbour weighting: a matching message's score adds shares of the scores beside it, along the record."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage

from durable_recall import ConversationSearch, SnapshotHistorySource, StepStore
from durable_recall.index import Bm25Params, Record, smoothed, smoothed_within
from durable_recall.index import _neighbours as neighbours_module
from durable_recall.search import SearchEngine, SearchRequest
from durable_recall.text import DEFAULT_SKIP_TOOLS, ENGLISH_STOPWORDS, index_text, stop_terms, tokenize

from ..hybrid._kit import chat
from ._oracle import rank
from ._stub import StubSource, context, reply, request, user

pytestmark = pytest.mark.anyio

# A chat whose runs each hold the history so far and one new exchange, as a chat app persists it.
EXCHANGES = [
    ('We adopted a puppy last week', 'What breed is the puppy?'),
    ('A beagle, she chews everything', 'Beagles are lively'),
    ('The garden needs work', 'Plant tomatoes'),
    ('The vet saw the puppy today', 'What did the vet say?'),
    ('Only a sprain, the puppy rests now', 'Good to hear'),
    ('My sister visits on Friday', 'Lovely, from Leeds?'),
]


def _source() -> StubSource:
    source = StubSource()
    history: list[ModelMessage] = []
    for index, (asked, answered) in enumerate(EXCHANGES):
        history = [*history, user(asked), reply(answered)]
        source.add(f'r{index}', history, conversation_id='c1')
    return source


def _engine(source: Any, **params: Any) -> SearchEngine:
    return SearchEngine(
        source=source,
        params=Bm25Params(**params),
        max_matches=1_000,
        context_lines=0,
        max_result_bytes=10_000_000,
        skip_tools=DEFAULT_SKIP_TOOLS,
        stopwords=ENGLISH_STOPWORDS,
    )


async def _ranked(engine: SearchEngine, query: str) -> list[tuple[int, float]]:
    outcome = await engine.rank(SearchRequest(query=query), scope='conversation', conversation_id='c1')
    return [(hit.candidate.position, hit.candidate.score) for hit in outcome.hits]


def _expected(messages: Sequence[ModelMessage], query: str, weights: tuple[float, ...]) -> list[tuple[int, float]]:
    docs = [tokenize(index_text(message)) for message in messages]
    terms = [term for term in dict.fromkeys(tokenize(query)) if term not in stop_terms(ENGLISH_STOPWORDS)]
    return rank(terms, [Counter(doc) for doc in docs], [len(doc) for doc in docs], neighbours=weights)


def _same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [position for position, _ in found] == [position for position, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected], rel=1e-12)


@pytest.mark.parametrize('query', ['puppy', 'what did the vet say about the puppy', 'beagle chews', 'sister Leeds'])
@pytest.mark.parametrize('weights', [(0.5, 0.25), (), (1.0,), (0.3, 0.2, 0.1)])
async def test_scores_are_the_oracles_along_the_record(query: str, weights: tuple[float, ...]) -> None:
    """Scores and order across runs (each run one exchange of the record) equal the written-out oracle."""
    source = _source()
    history = await source.run_history(f'r{len(EXCHANGES) - 1}')
    assert history is not None
    found = await _ranked(_engine(source, neighbours=weights), query)
    _same(found, _expected(history.messages, query, weights))


async def test_a_match_beside_other_matches_ranks_above_an_equal_one_alone() -> None:
    """Three equal matches: the two side by side come first; BM25 alone keeps corpus order."""
    source = StubSource()
    history: list[ModelMessage] = []
    for index, (asked, answered) in enumerate([('orca spotted', 'nice day'), ('walrus sighted', 'orca seen')]):
        history = [*history, user(asked), reply(answered)]
        source.add(f'r{index}', history, conversation_id='c1')
    source.add('r2', [*history, user('orca found'), reply('fine')], conversation_id='c1')
    weighed = [position for position, _ in await _ranked(_engine(source), 'orca')]
    alone = [position for position, _ in await _ranked(_engine(source, neighbours=()), 'orca')]
    assert alone == [0, 3, 4]
    assert weighed == [3, 4, 0]


async def test_a_message_without_the_query_words_is_never_a_hit() -> None:
    source = _source()
    answer = await ConversationSearch(source, scope='conversation', context_lines=0).search(
        context(), request('sprain')
    )
    assert answer.startswith("1 match for 'sprain'")  # its neighbours gain nothing from it
    answer = await ConversationSearch(source, scope='conversation').search(context(), request('zeppelin'))
    assert answer.startswith("No matches for 'zeppelin'")


async def test_a_store_wide_search_weighs_within_each_run() -> None:
    """`scope='all'`: a run's last message never gains from the first of the next run (another conversation)."""
    source = StubSource()
    source.add('a', [user('walrus facts'), reply('the walrus sleeps')], conversation_id='c1')
    source.add('b', [user('a walrus again'), reply('nothing more')], conversation_id='c2')
    engine = _engine(source)
    outcome = await engine.rank(SearchRequest(query='walrus'), scope='all', conversation_id=None)
    scores = {(hit.candidate.run_id, hit.candidate.position): hit.candidate.score for hit in outcome.hits}
    alone = await _engine(source, neighbours=()).rank(SearchRequest(query='walrus'), scope='all', conversation_id=None)
    own = {(hit.candidate.run_id, hit.candidate.position): hit.candidate.score for hit in alone.hits}
    assert set(scores) == set(own) == {('a', 0), ('a', 1), ('b', 0)}
    assert scores[('b', 0)] == own[('b', 0)]  # alone in its run
    assert scores[('a', 0)] == pytest.approx(own[('a', 0)] + 0.5 * own[('a', 1)])
    assert scores[('a', 1)] == pytest.approx(own[('a', 1)] + 0.5 * own[('a', 0)])


def _both_paths(monkeypatch: pytest.MonkeyPatch, weigh: Callable[[], dict[int, float]]) -> tuple[dict[int, float], ...]:
    arrays = weigh()
    monkeypatch.setattr(neighbours_module, '_ARRAYS_FROM', math.inf)
    monkeypatch.setattr(neighbours_module, '_ARRAYS_AFTER_IMPORT', math.inf)
    loop = weigh()
    monkeypatch.undo()
    return arrays, loop


def test_the_array_paths_give_the_python_paths_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    segments = [(run_key, rng.randrange(3), rng.randrange(3, 40)) for run_key in range(200)]
    record = Record(segments, reach=3)
    keys = [key for key in record.keys if key >= 0]
    scores = {key: rng.uniform(0.1, 9) for key in rng.sample(keys, 3000)}
    weights = (0.5, 0.25, 0.125)
    along, along_loop = _both_paths(monkeypatch, lambda: smoothed(scores, record, weights))
    within, within_loop = _both_paths(monkeypatch, lambda: smoothed_within(scores, weights))
    assert along == along_loop and within == within_loop  # the same floats, to the last bit
    assert along != scores and within != scores and along != within  # runs' ends lend along the record only
    for key, total in within.items():  # within a run: only that run's scored positions lend
        run, own = key >> 32, scores[key]
        lent = [
            weight * (scores.get(key - d, 0.0) if (key - d) >> 32 == run else 0.0)
            + weight * (scores.get(key + d, 0.0) if (key + d) >> 32 == run else 0.0)
            for d, weight in enumerate(weights, start=1)
        ]
        assert total == pytest.approx(own + sum(lent), rel=1e-12)


@pytest.mark.parametrize(
    ('value', 'error', 'message'),
    [
        ('0.5', TypeError, "neighbours must be a sequence of numbers such as (0.5, 0.25), got '0.5'"),
        (0.5, TypeError, 'neighbours must be a sequence of numbers such as (0.5, 0.25), got 0.5'),
        ((0.5, 2), ValueError, 'a neighbour weight must be between 0 and 1, got 2'),
        ((-0.1,), ValueError, 'a neighbour weight must be between 0 and 1, got -0.1'),
        ((math.nan,), ValueError, 'a neighbour weight must be a finite number, got nan'),
        (('0.5',), TypeError, "a neighbour weight must be an int or float, got '0.5'"),
        ((0.1,) * 9, ValueError, 'neighbours takes at most 8 weights, got 9: ' + repr((0.1,) * 9)),
    ],
)
def test_bad_weights_are_refused_at_construction(value: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        ConversationSearch(_source(), scope='conversation', neighbour_weights=value)
    assert str(raised.value) == message


def test_any_sequence_is_kept_as_a_tuple() -> None:
    assert Bm25Params(neighbours=[0.5]).neighbours == (0.5,)
    assert Bm25Params().neighbours == (0.5, 0.25)


async def test_on_every_store(store: StepStore) -> None:
    """A chat a real agent persisted (`StepPersistence`, one run per exchange), ranked through the store's index."""
    history = await chat(store, EXCHANGES, index=False)  # the search catches the index up itself
    engine = _engine(SnapshotHistorySource(store))
    for query in ['puppy', 'what did the vet say about the puppy', 'beagle chews']:
        outcome = await engine.rank(SearchRequest(query=query), scope='conversation', conversation_id='c1')
        # Each run shows its own exchange: its positions are the record's, after the history it inherited.
        found = [(hit.candidate.position, hit.candidate.score) for hit in outcome.hits]
        _same(found, _expected(history, query, (0.5, 0.25)))
