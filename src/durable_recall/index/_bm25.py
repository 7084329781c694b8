"""BM25 ranking as pure arithmetic over term counts: no text, no storage, no clock.

The variant is Okapi BM25 as given by Robertson & Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond" (Foundations and Trends in IR 3(4), 2009), with the idf Lucene uses
(`BM25Similarity`): `ln(1 + (N - df + 0.5) / (df + 0.5))`. The `+1` inside the log keeps every idf
positive, so a term found in every document still counts a little, where the classic idf goes
negative and would push such documents down.

    score(d) = sum over query terms t with tf(t, d) > 0 of
               idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

Each query term is scored on its own and the scores add up (OR semantics, no phrases), so rare
terms count for more than common ones. The persistent index computes the same numbers from its
postings with `idf` and `score_term`; `rank` is the whole computation over an in-memory corpus,
and the oracle the index is tested against.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ('Bm25Params', 'idf', 'rank', 'score_term', 'term_frequencies')


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """The two BM25 knobs, checked when built so a bad value fails at configuration, not mid-search.

    Args:
        k1: How quickly repeats of a term stop adding score (term-frequency saturation). 0 means
            only presence counts; larger values let repeats keep counting longer.
        b: How much a document's length discounts its score: 0 ignores length, 1 normalises fully
            by length relative to the average.
    """

    k1: float = 1.5
    b: float = 0.75

    def __post_init__(self) -> None:
        _check_real('k1', self.k1)
        _check_real('b', self.b)
        if self.k1 < 0:
            raise ValueError(f'k1 must be at least 0, got {self.k1!r}')
        if not 0 <= self.b <= 1:
            raise ValueError(f'b must be between 0 and 1, got {self.b!r}')


def _check_real(name: str, value: object) -> None:
    """Reject what is not a finite int or float; `bool` and numeric strings included."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f'{name} must be an int or float, got {value!r}')
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise ValueError(f'{name} must be a finite number, got {value!r}')


def idf(n_docs: int, df: int) -> float:
    """Inverse document frequency of a term found in `df` of `n_docs` documents (0 when `df` is 0)."""
    if df <= 0:
        return 0.0
    return math.log((n_docs - df + 0.5) / (df + 0.5) + 1)


def score_term(tf: int, dl: int, avgdl: float, idf: float, params: Bm25Params) -> float:
    """One term's contribution to one document's score.

    Args:
        tf: How often the term occurs in the document.
        dl: The document's length in tokens.
        avgdl: The mean document length over the corpus.
        idf: The term's `idf`.
        params: `k1` and `b`.

    Returns:
        The contribution, or 0 for an absent term, an empty document or an empty corpus (which
        would otherwise divide by zero).
    """
    if tf <= 0 or dl <= 0 or avgdl <= 0:
        return 0.0
    k1 = params.k1
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - params.b + params.b * dl / avgdl))


def rank(
    query_terms: Iterable[str],
    docs_term_freqs: Sequence[Mapping[str, int]],
    doc_lengths: Sequence[int],
    params: Bm25Params | None = None,
) -> list[tuple[int, float]]:
    """Rank a corpus for a query: `(document index, score)`, best first, scores above 0 only.

    Args:
        query_terms: The query's terms (from `tokenize`). A repeated term counts once: typing a
            word twice is not a reason to weigh it double.
        docs_term_freqs: Per document, how often each term occurs in it.
        doc_lengths: Per document, its length in tokens. Documents without text are still
            documents: they count toward N and the average length, and never score.
        params: `k1` and `b`; the defaults when `None`.

    Returns:
        Documents with a positive score, by score descending. The sort is stable, so equal scores
        keep corpus order, which makes results reproducible.

    Raises:
        ValueError: `doc_lengths` and `docs_term_freqs` differ in length.
    """
    if len(doc_lengths) != len(docs_term_freqs):
        raise ValueError(
            'doc_lengths and docs_term_freqs must have the same length, '
            f'got {len(doc_lengths)} and {len(docs_term_freqs)}'
        )
    if params is None:
        params = Bm25Params()
    terms = list(dict.fromkeys(query_terms))
    n_docs = len(docs_term_freqs)
    if not terms or n_docs == 0:
        return []
    avgdl = sum(doc_lengths) / n_docs
    idfs = [idf(n_docs, sum(1 for freqs in docs_term_freqs if freqs.get(term, 0) > 0)) for term in terms]
    ranked: list[tuple[int, float]] = []
    for index, (freqs, dl) in enumerate(zip(docs_term_freqs, doc_lengths, strict=True)):
        score = 0.0
        for term, term_idf in zip(terms, idfs, strict=True):
            score += score_term(freqs.get(term, 0), dl, avgdl, term_idf, params)
        if score > 0:
            ranked.append((index, score))
    ranked.sort(key=lambda item: -item[1])
    return ranked


def term_frequencies(terms: Iterable[str]) -> dict[str, int]:
    """How often each term occurs: a document's side of `rank`, from its `tokenize` output."""
    return dict(Counter(terms))
