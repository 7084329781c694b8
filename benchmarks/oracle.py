"""An exact BM25 oracle: plain loops over the in-scope documents, nothing cached but the token counts.

Documents are messages, rendered with our `index_text` and split with our `tokenize`, so the
oracle and the search agree on what a term is; everything after that (document frequency, idf,
the average length, the score) is computed here from scratch, without the library's ranking code.
The idf is Lucene's `ln(1 + (N - df + 0.5) / (df + 0.5))`, as the search documents. A query is
searched without its stopwords (the library's list by default) unless it has no other word, as
the search does. A matching document's score then adds the neighbour weights' shares of the BM25
scores of the documents before and after it in the list (`Bm25Params.neighbours`), as the search
weighs a conversation's record.

`overlap_at` compares a search's top results with the oracle's, counting a result as agreeing
when its oracle score is at least the oracle's k-th best score, so ties at the cut do not count
as disagreement.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage

from durable_recall.text import ENGLISH_STOPWORDS, index_text, tokenize

__all__ = ('Oracle', 'overlap_at')

_MAX_QUERY_TERMS = 64


@dataclass(frozen=True)
class _Document:
    counts: Counter[str]
    length: int


class Oracle:
    """BM25 over a fixed list of messages (the conversation's distinct messages, in order).

    `k1`, `b` and `neighbours` default to the library's defaults (`Bm25Params`), written out here
    so that the oracle shares no code with what it checks.
    """

    def __init__(
        self,
        messages: Sequence[ModelMessage],
        *,
        k1: float = 1.5,
        b: float = 0.3,
        stopwords: Collection[str] = ENGLISH_STOPWORDS,
        neighbours: Sequence[float] = (0.5, 0.25),
    ) -> None:
        self.k1 = k1
        self.b = b
        self.neighbours = tuple(neighbours)
        self.stop = {term for word in stopwords for term in tokenize(word)}
        self.documents: list[_Document] = []
        for message in messages:
            terms = tokenize(index_text(message))
            self.documents.append(_Document(Counter(terms), len(terms)))

    def scores(self, query: str) -> list[float]:
        """Every document's score for the query, in document order."""
        terms = list(dict.fromkeys(tokenize(query)))
        terms = [term for term in terms if term not in self.stop] or terms
        terms = terms[:_MAX_QUERY_TERMS]
        n = len(self.documents)
        if n == 0:
            return []
        avgdl = sum(document.length for document in self.documents) / n
        scores = [0.0] * n
        for term in terms:
            df = 0
            for document in self.documents:
                if term in document.counts:
                    df += 1
            if df == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for index, document in enumerate(self.documents):
                tf = document.counts.get(term, 0)
                if tf == 0 or document.length == 0 or avgdl == 0:
                    continue
                norm = self.k1 * (1 - self.b + self.b * document.length / avgdl)
                scores[index] += idf * tf * (self.k1 + 1) / (tf + norm)
        weighed = list(scores)
        for index, own in enumerate(scores):
            if own <= 0:
                continue
            for distance, weight in enumerate(self.neighbours, start=1):
                before = scores[index - distance] if index >= distance else 0.0
                after = scores[index + distance] if index + distance < n else 0.0
                weighed[index] += weight * (before + after)
        return weighed

    def top(self, query: str, k: int = 10) -> list[tuple[int, float]]:
        """The `k` best `(document index, score)` pairs with a positive score, best first."""
        ranked = sorted(
            ((index, score) for index, score in enumerate(self.scores(query)) if score > 0),
            key=lambda item: (-item[1], item[0]),
        )
        return ranked[:k]


def overlap_at(found: Sequence[int], scores: Sequence[float], k: int = 10) -> float:
    """Share of the oracle's top `k` that the search's top `k` (document indexes) agrees with.

    Args:
        found: The search's results as document indexes, best first.
        scores: The oracle's score of every document.
        k: The cut.

    Returns:
        1.0 when both have nothing to show; otherwise the number of found documents that belong
        in the oracle's top `k` (score at least its k-th best, ties included), over the number the
        oracle has (at most `k`).
    """
    positive = sorted((score for score in scores if score > 0), reverse=True)
    expected = min(k, len(positive))
    if expected == 0:
        return 1.0 if not found else 0.0
    cut = positive[expected - 1] - 1e-9
    agreeing = sum(1 for index in found[:k] if 0 <= index < len(scores) and scores[index] >= cut)
    return min(agreeing, expected) / expected
