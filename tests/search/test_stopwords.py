"""Query stopwords: a question is searched by what it asks about, not by the words that make it a question."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence, StepStore
from durable_recall.index import Bm25Params
from durable_recall.search import ENGLISH_STOPWORDS
from durable_recall.search._request import query_terms
from durable_recall.text import index_text, stop_terms, tokenize

from ._oracle import rank
from ._stub import T0, StubSource, context, reply, request, user

pytestmark = pytest.mark.anyio

STATEMENT = 'I painted a sunset over the lake last weekend'


def _source() -> StubSource:
    """A chat where the other questions share a question's function words, and one message its subject."""
    source = StubSource()
    said = [
        ('What did you do this weekend? What did you think of it?', 'Not much, what did you do?'),
        ('Oh, you know me.', STATEMENT),
        ('What did you have for dinner? Did you cook?', 'What do you think I did?'),
    ]
    history: list[ModelMessage] = []
    for index, (asked, answered) in enumerate(said):
        at = T0 + timedelta(hours=index)
        history = [*history, user(asked, at), reply(answered, at + timedelta(minutes=1))]
        source.add(f'r{index}', history, conversation_id='c1')
    return source


def _first_match(answer: str) -> str:
    return next(line for line in answer.splitlines() if line.startswith('>'))


async def test_a_question_finds_the_statement_not_the_other_questions() -> None:
    source = _source()
    ask = request('What did you paint?')
    answer = await ConversationSearch(source, scope='conversation', context_lines=0).search(context(), ask)
    assert STATEMENT in _first_match(answer)
    assert answer.startswith("1 match for 'What did you paint?'")  # only `paint` was searched
    # BM25 alone (no neighbour weighting, which also lifts the statement beside a question).
    every_word = ConversationSearch(source, scope='conversation', context_lines=0, stopwords=(), neighbour_weights=())
    answer = await every_word.search(context(), ask)
    assert 'What did you' in _first_match(answer), 'with every word searched, the questions come first'


async def test_a_query_of_stopwords_alone_keeps_them() -> None:
    answer = await ConversationSearch(_source(), scope='conversation').search(context(), request('what did you'))
    assert answer.split(' ', 1)[0].isdigit(), answer
    assert '>[0] User: What did you do this weekend?' in answer


async def test_words_of_ones_own() -> None:
    search = ConversationSearch(_source(), scope='conversation', context_lines=0, stopwords=['sunset', 'dinner'])
    answer = await search.search(context(), request('sunset dinner lake'))
    assert answer.startswith('1 match for') and STATEMENT in _first_match(answer)  # by `lake` alone


def test_terms_are_analysed_like_the_index() -> None:
    terms = stop_terms(ENGLISH_STOPWORDS)
    assert {'do', 'doe', 'you', 're', 'what'} <= terms  # `does` stems to `doe`, `you're` is two terms
    assert not {'won', 'don', 'paint'} & terms  # `won` and `don` are words of their own
    assert query_terms("What didn't Don win, and what won?", terms) == ['don', 'win', 'won']
    assert query_terms('who are you', terms) == ['who', 'are', 'you']


@pytest.mark.parametrize(
    ('value', 'message'),
    [
        ('the', "stopwords must be a collection of words (strings), got 'the'"),
        ([1], 'stopwords must be strings, got 1'),
    ],
)
def test_a_bad_list_is_refused_at_construction(value: Any, message: str) -> None:
    with pytest.raises(TypeError) as raised:
        ConversationSearch(_source(), scope='conversation', stopwords=value)
    assert str(raised.value) == message


async def test_the_ranking_is_bm25_over_the_words_left() -> None:
    """The engine's scores and order are the oracle's over the query's terms less the stopwords."""
    source = _source()
    history = await source.run_history('r2')  # the last run holds the whole chat
    assert history is not None
    messages = history.messages
    docs = [tokenize(index_text(message)) for message in messages]
    query = 'What did you think of the sunset, and what did you cook for dinner?'
    left = [term for term in dict.fromkeys(tokenize(query)) if term not in stop_terms(ENGLISH_STOPWORDS)]
    assert left == ['think', 'sunset', 'cook', 'dinner']
    params = Bm25Params()
    expected = rank(
        left, [Counter(doc) for doc in docs], [len(doc) for doc in docs], params, neighbours=params.neighbours
    )
    search = ConversationSearch(source, scope='conversation', context_lines=0, max_matches=20)
    answer = await search.search(context(), request(query))
    shown = re.findall(r'^\[score: ([0-9.]+) .*\n>\[(\d+)\]', answer, re.M)
    assert [(f'{score:.1f}', str(index)) for index, score in expected] == shown
    assert len(shown) == 4


async def test_on_every_store(store: StepStore) -> None:
    """The same chat persisted by a real agent (`StepPersistence`), searched through the store's own index."""
    replies = iter(['Not much, what did you do?', STATEMENT, 'What do you think I did?'])

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(next(replies))])

    agent = Agent(FunctionModel(scripted), capabilities=[StepPersistence(store=store)])
    history: list[ModelMessage] | None = None
    for prompt in ['What did you do this weekend? What did you think of it?', 'Oh, you know me.', 'Did you cook?']:
        history = (await agent.run(prompt, message_history=history, conversation_id='c1')).all_messages()
    source = SnapshotHistorySource(store)
    ask = request('What did you paint?')
    answer = await ConversationSearch(source, scope='conversation', context_lines=0).search(context(), ask)
    assert answer.startswith("1 match for 'What did you paint?'") and STATEMENT in _first_match(answer)
    every_word = ConversationSearch(source, scope='conversation', context_lines=0, stopwords=())
    assert STATEMENT not in _first_match(await every_word.search(context(), ask))
