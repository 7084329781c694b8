"""BM25 ranking as pure arithmetic over term counts: no text, no storage, no clock.

The variant is Okapi BM25 as given by Robertson & Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond" (Foundations and Trends in IR 3(4), 2009), with the idf Lucene uses
(`BM25Similarity`): `ln(1 + (N - df + 0.5) / (df + 0.5))`. The `+1` inside the log keeps every idf
positive, so a term found in every document still counts a little, where the classic idf goes
negative and would push such documents down.

    score(d) = sum over query terms t with tf(t, d) > 0 of
               idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

Each query term is scored on its own and the scores add up (OR semantics, no phrases), so rare
terms count for more than common ones. Only the pieces live here: `idf`, and `score_term`, one
term's contribution written out once. The index's scorer (`_scoring`) adds the same expression up
inline over decoded postings, in the same order of operations, so its scores are these to the
last bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

__all__ = ('DEFAULT_NEIGHBOURS', 'MAX_NEIGHBOURS', 'Bm25Params', 'idf', 'score_term')

DEFAULT_NEIGHBOURS = (0.5, 0.25)
"""The shares of the scores of the messages one and two steps away that a message's score adds (`_neighbours`)."""

MAX_NEIGHBOURS = 8
"""How far neighbour weighting may reach: the most weights `Bm25Params.neighbours` takes."""


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """The two BM25 knobs, checked when built so a bad value fails at configuration, not mid-search.

    Args:
        k1: How quickly repeats of a term stop adding score (term-frequency saturation). 0 means
            only presence counts; larger values let repeats keep counting longer.
        b: How much a document's length discounts its score: 0 ignores length, 1 normalises fully
            by length relative to the average. 0.3 by default, not the textbook 0.75: in a
            conversation the message that states a fact (the answer a later question needs) is
            usually longer than the chatter around it, and full normalisation ranks it below short
            replies that repeat a query word. Measured with `benchmarks.locomo --matches 10` on five
            real long chats (759 questions): the ten best matches held 0.500 of the evidence turns
            at 0.3 against 0.455 at 0.75 (0.483 at 0.5; 0.501 to 0.509 from 0.2 down to 0), and a
            6,000-byte answer 0.637 against 0.610; on the synthetic recall benchmark's held-out
            seed (`benchmarks.run --workload recall`) recall@10 rose from 0.786 to 0.810.
        neighbours: After BM25, a matching message's score adds `neighbours[d - 1]` times the
            scores of the messages `d` steps before and after it, in the order a block's window
            walks (`_neighbours`): a match in the middle of a passage about the query ranks above
            one said in passing. `(0.5, 0.25)` by default; `()` is BM25 alone. Each
            weight is a finite number from 0 to 1; at most `MAX_NEIGHBOURS` of them (any
            sequence; kept as a tuple).
    """

    k1: float = 1.5
    b: float = 0.3
    neighbours: Sequence[float] = DEFAULT_NEIGHBOURS

    def __post_init__(self) -> None:
        _check_real('k1', self.k1)
        _check_real('b', self.b)
        object.__setattr__(self, 'neighbours', _check_neighbours(self.neighbours))
        if self.k1 < 0:
            raise ValueError(f'k1 must be at least 0, got {self.k1!r}')
        if not 0 <= self.b <= 1:
            raise ValueError(f'b must be between 0 and 1, got {self.b!r}')


def _check_neighbours(weights: object) -> tuple[float, ...]:
    """Neighbour weights as a tuple; refused unless a sequence of at most `MAX_NEIGHBOURS` numbers from 0 to 1."""
    if isinstance(weights, str | bytes) or not isinstance(weights, Sequence):
        raise TypeError(f'neighbours must be a sequence of numbers such as (0.5, 0.25), got {weights!r}')
    items = tuple(cast(Sequence[object], weights))
    if len(items) > MAX_NEIGHBOURS:
        raise ValueError(f'neighbours takes at most {MAX_NEIGHBOURS} weights, got {len(items)}: {weights!r}')
    for weight in items:
        _check_real('a neighbour weight', weight)
        if not 0 <= weight <= 1:  # pyright: ignore[reportOperatorIssue]
            raise ValueError(f'a neighbour weight must be between 0 and 1, got {weight!r}')
    return cast(tuple[float, ...], items)


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
    """Inverse document frequency of a term found in `df` of `n_docs` documents (0 when `df` is 0).

    Also 0 for counts no index can hold (`n_docs` below -0.5, which only a damaged index gives):
    the logarithm would raise a math domain error out of a search. The ranker names such damage
    in its answer; this keeps the arithmetic total whatever it is handed.
    """
    if df <= 0:
        return 0.0
    ratio = (n_docs - df + 0.5) / (df + 0.5) + 1
    return math.log(ratio) if ratio > 0 else 0.0


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
