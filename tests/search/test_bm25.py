"""BM25: the reference's numbers, an independent oracle, parameter checks.

`idf` and `score_term` are checked summed over a whole corpus (`_oracle.rank`), against the
reference implementation's numbers and a textbook formula that shares no code with them; and the
index's scorer (`top_scores`, which writes `score_term` out inline) against that sum, float for float.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_recall.index import Bm25Params, Match, idf, scope_matches, score_term, term_order, top_scores
from durable_recall.index._chunks import Chunk
from durable_recall.index._columns import Columns
from durable_recall.text import tokenize

from ._oracle import rank


def corpus(docs: Sequence[Sequence[str]]) -> tuple[list[Counter[str]], list[int]]:
    return [Counter(doc) for doc in docs], [len(doc) for doc in docs]


def oracle(
    query: Sequence[str], docs: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75
) -> list[tuple[int, float]]:
    """BM25 written out from the textbook formula, sharing no code with the module under test."""
    terms: list[str] = []
    for term in query:
        if term not in terms:
            terms.append(term)
    n = len(docs)
    if n == 0 or not terms:
        return []
    avgdl = sum(len(doc) for doc in docs) / n
    results: list[tuple[int, float]] = []
    for index, doc in enumerate(docs):
        total = 0.0
        for term in terms:
            tf = doc.count(term)
            if tf == 0 or len(doc) == 0 or avgdl == 0:
                continue
            df = 0
            for other in docs:
                if term in other:
                    df += 1
            weight = math.log((n - df + 0.5) / (df + 0.5) + 1)
            total += weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        if total > 0:
            results.append((index, total))
    # Insertion sort: stable by construction, descending by score.
    ordered: list[tuple[int, float]] = []
    for item in results:
        position = len(ordered)
        while position > 0 and ordered[position - 1][1] < item[1]:
            position -= 1
        ordered.insert(position, item)
    return ordered


def assert_ranked(actual: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [index for index, _ in actual] == [index for index, _ in expected]
    for (_, got), (_, want) in zip(actual, expected, strict=True):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


REFERENCE_DOCS = [
    # The reference indexed its role labels, so its documents hold these tokens. Written out
    # here to show the arithmetic is the same; our own documents leave the labels out.
    ['user', 'alpha', 'beta'],
    ['assistant', 'gamma', 'delta'],
    ['user', 'alpha', 'alpha', 'epsilon'],
    ['assistant', 'zeta'],
    ['user', 'beta', 'only', 'here'],
    ['assistant', 'no', 'match'],
]


class TestReferenceVectors:
    # The reference's numbers were computed with the textbook b=0.75, which every row but b=0 states.
    @pytest.mark.parametrize(
        ('query', 'params', 'expected'),
        [
            (
                'alpha beta',
                Bm25Params(b=0.75),
                [(0, 2.1091934152498117), (2, 1.3561711560791685), (4, 0.9206008906560944)],
            ),
            ('alpha', Bm25Params(b=0.75), [(2, 1.3561711560791685), (0, 1.0545967076249059)]),
            ('ALPHA alpha', Bm25Params(b=0.75), [(2, 1.3561711560791685), (0, 1.0545967076249059)]),
            ('user', Bm25Params(b=0.75), [(0, 0.7099620717325585), (2, 0.6197551261477158), (4, 0.6197551261477158)]),
            ('alpha', Bm25Params(k1=1.2, b=0.75), [(2, 1.3181651344003804), (0, 1.0522760791729195)]),
            ('alpha', Bm25Params(k1=0, b=0.75), [(0, 1.0296194171811581), (2, 1.0296194171811581)]),
            ('alpha', Bm25Params(b=0), [(2, 1.4708848816873688), (0, 1.0296194171811581)]),
        ],
    )
    def test_reference_numbers(self, query: str, params: Bm25Params, expected: list[tuple[int, float]]) -> None:
        freqs, lengths = corpus(REFERENCE_DOCS)
        assert sum(lengths) / len(lengths) == 19 / 6
        assert_ranked(rank(tokenize(query), freqs, lengths, params), expected)


OUR_DOCS = [
    tokenize(text)
    for text in ['alpha beta', 'gamma delta', 'alpha alpha epsilon', 'zeta', 'beta only here', 'no match']
]


class TestOurLabelling:
    """The same conversation rendered our way: no role tokens, so lengths and idfs differ."""

    def test_documents_hold_no_role_tokens(self) -> None:
        assert OUR_DOCS[0] == ['alpha', 'beta']
        assert sum(len(doc) for doc in OUR_DOCS) == 13

    @pytest.mark.parametrize('query', ['alpha beta', 'alpha', 'beta', 'zeta', 'alpha zeta nothing', 'here here only'])
    @pytest.mark.parametrize('params', [Bm25Params(), Bm25Params(k1=1.2), Bm25Params(k1=0), Bm25Params(b=0)])
    def test_matches_oracle(self, query: str, params: Bm25Params) -> None:
        freqs, lengths = corpus(OUR_DOCS)
        expected = oracle(tokenize(query), OUR_DOCS, params.k1, params.b)
        assert expected
        assert_ranked(rank(tokenize(query), freqs, lengths, params), expected)

    def test_alpha_hand_computed(self) -> None:
        freqs, lengths = corpus(OUR_DOCS)
        weight = math.log((6 - 2 + 0.5) / (2 + 0.5) + 1)
        avgdl = 13 / 6
        # k1=1.5, b=0.3 (the defaults): 1 - b = 0.7.
        d0 = weight * 1 * 2.5 / (1 + 1.5 * (0.7 + 0.3 * 2 / avgdl))
        d2 = weight * 2 * 2.5 / (2 + 1.5 * (0.7 + 0.3 * 3 / avgdl))
        assert_ranked(rank(['alpha'], freqs, lengths), [(2, d2), (0, d0)])

    def test_role_words_match_nothing(self) -> None:
        freqs, lengths = corpus(OUR_DOCS)
        assert rank(['user'], freqs, lengths) == []
        assert rank(['assistant'], freqs, lengths) == []


class TestRank:
    def test_rare_terms_outweigh_common_ones(self) -> None:
        docs = [['common', 'rare'], ['common', 'filler'], ['common', 'filler'], ['common', 'filler']]
        freqs, lengths = corpus(docs)
        assert rank(['common', 'rare'], freqs, lengths)[0][0] == 0
        assert idf(4, 1) > idf(4, 4) > 0

    def test_empty_documents_count_but_never_score(self) -> None:
        with_empty = corpus([['x'], [], ['y']])
        without = corpus([['x'], ['y']])
        assert [index for index, _ in rank(['x'], *with_empty)] == [0]
        assert rank(['x'], *with_empty)[0][1] != rank(['x'], *without)[0][1]

    @pytest.mark.parametrize(
        ('query', 'docs'),
        [([], [['x']]), (['x'], []), (['x'], [[], []]), (['absent'], [['x']])],
    )
    def test_nothing_to_rank(self, query: list[str], docs: list[list[str]]) -> None:
        assert rank(query, *corpus(docs)) == []


class TestPieces:
    def test_idf(self) -> None:
        assert idf(6, 0) == 0
        assert idf(6, 2) == pytest.approx(math.log(2.8))
        assert idf(6, 6) > 0

    def test_score_term_zero_cases(self) -> None:
        params = Bm25Params()
        assert score_term(0, 3, 2.0, 1.0, params) == 0
        assert score_term(1, 0, 2.0, 1.0, params) == 0
        assert score_term(1, 3, 0.0, 1.0, params) == 0

    def test_score_term_saturates(self) -> None:
        params = Bm25Params()
        scores = [score_term(tf, 10, 10.0, 1.0, params) for tf in (1, 2, 10, 1000)]
        assert scores == sorted(scores)
        assert scores[-1] < 1.0 * (params.k1 + 1)


class TestParams:
    def test_defaults(self) -> None:
        assert Bm25Params() == Bm25Params(k1=1.5, b=0.3)

    @pytest.mark.parametrize(('k1', 'b'), [(0, 0), (0.0, 1), (2, 0.5), (100.0, 1.0)])
    def test_accepted(self, k1: float, b: float) -> None:
        assert Bm25Params(k1=k1, b=b).k1 == k1

    @pytest.mark.parametrize(
        ('kwargs', 'error', 'message'),
        [
            ({'k1': True}, TypeError, 'k1 must be an int or float, got True'),
            ({'k1': '1.5'}, TypeError, "k1 must be an int or float, got '1.5'"),
            ({'b': None}, TypeError, 'b must be an int or float, got None'),
            ({'b': False}, TypeError, 'b must be an int or float, got False'),
            ({'k1': -0.1}, ValueError, r'k1 must be at least 0, got -0\.1'),
            ({'k1': math.inf}, ValueError, 'k1 must be a finite number, got inf'),
            ({'k1': math.nan}, ValueError, 'k1 must be a finite number, got nan'),
            ({'k1': 10**400}, ValueError, 'k1 must be a finite number, got 1000'),
            ({'b': 1.5}, ValueError, r'b must be between 0 and 1, got 1\.5'),
            ({'b': -1}, ValueError, 'b must be between 0 and 1, got -1'),
        ],
    )
    def test_rejected(self, kwargs: dict[str, object], error: type[Exception], message: str) -> None:
        with pytest.raises(error, match=message):
            Bm25Params(**kwargs)  # pyright: ignore[reportArgumentType]


_VOCABULARY = ['a', 'b', 'c', 'd', 'e']


@given(
    docs=st.lists(st.lists(st.sampled_from(_VOCABULARY), max_size=8), max_size=8),
    query=st.lists(st.sampled_from([*_VOCABULARY, 'zz']), max_size=5),
    k1=st.floats(min_value=0, max_value=5),
    b=st.floats(min_value=0, max_value=1),
)
def test_rank_equals_oracle(docs: list[list[str]], query: list[str], k1: float, b: float) -> None:
    freqs, lengths = corpus(docs)
    assert_ranked(rank(query, freqs, lengths, Bm25Params(k1=k1, b=b)), oracle(query, docs, k1, b))


# The first example may pay numpy's import (~0.1-0.3 s): the deadline would time that, not the scorer.
@settings(deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(_VOCABULARY), max_size=8), max_size=8),
    query=st.lists(st.sampled_from([*_VOCABULARY, 'zz']), max_size=5),
    k1=st.floats(min_value=0, max_value=5),
    b=st.floats(min_value=0, max_value=1),
    k=st.none() | st.integers(min_value=1, max_value=8),
    vectorised=st.booleans(),
)
def test_index_scoring_equals_rank(
    docs: list[list[str]], query: list[str], k1: float, b: float, k: int | None, vectorised: bool
) -> None:
    """`top_scores` over one chunk per term gives `rank`'s floats, with the terms in `term_order`, with numpy or not."""
    params = Bm25Params(k1=k1, b=b)
    freqs, lengths = corpus(docs)
    avgdl = sum(lengths) / len(docs) if docs else 0.0
    terms: list[tuple[str, float, list[Match]]] = []
    for term in dict.fromkeys(query):
        found = [index for index, counts in enumerate(freqs) if counts[term]]
        chunk = Chunk(found, [freqs[index][term] for index in found], [lengths[index] for index in found])
        terms.append((term, idf(len(docs), len(found)), scope_matches([chunk])))
    in_order = [term for term, _, _ in sorted(terms, key=lambda item: term_order(item[0], item[1]))]
    expected = dict(rank(in_order, freqs, lengths, params))

    scores = top_scores(terms, avgdl, params, k, vectorised=vectorised)

    assert all(scores[index] == expected[index] for index in scores)
    if k is None:
        assert scores.keys() == expected.keys()
    else:
        best = sorted(expected.values(), reverse=True)[:k]
        assert all(index in scores for index, score in expected.items() if best and score > best[-1])


# The first example may pay numpy's import (~0.1-0.3 s): the deadline would time that, not the scorer.
@settings(deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(_VOCABULARY), max_size=8), max_size=12),
    queries=st.lists(st.lists(st.sampled_from([*_VOCABULARY, 'zz']), max_size=5), min_size=1, max_size=4),
    k=st.none() | st.integers(min_value=1, max_value=4),
)
def test_numpy_columns_score_as_rank_search_after_search(
    docs: list[list[str]], queries: list[list[str]], k: int | None
) -> None:
    """A term's `Columns` are cached between searches, with its shares memoised: no search may change them."""
    import numpy as np

    params = Bm25Params()
    freqs, lengths = corpus(docs)
    avgdl = sum(lengths) / len(docs) if docs else 0.0
    postings: dict[str, Columns] = {}
    for term in [*_VOCABULARY, 'zz']:
        found = [index for index, counts in enumerate(freqs) if counts[term]]
        postings[term] = Columns(
            np.array(found, dtype=np.uint64),
            np.array([freqs[index][term] for index in found], dtype=np.float64),
            np.array([lengths[index] for index in found], dtype=np.float64),
        )
    for query in [*queries, *queries]:
        terms = [
            (term, idf(len(docs), len(postings[term])), scope_matches([postings[term]]))
            for term in dict.fromkeys(query)
        ]
        in_order = [term for term, _, _ in sorted(terms, key=lambda item: term_order(item[0], item[1]))]
        expected = dict(rank(in_order, freqs, lengths, params))
        scores = top_scores(terms, avgdl, params, k)
        assert all(scores[index] == expected[index] for index in scores)
        if k is None:
            assert scores.keys() == expected.keys()
        else:
            best = sorted(expected.values(), reverse=True)[:k]
            assert all(index in scores for index, score in expected.items() if best and score >= best[-1])
