"""BM25 over a whole in-memory corpus, composed from the library's `idf` and `score_term`.

The library ranks only through its corpus and its persistent index; neither needs a ranking of a
bare list of documents, so this lives with the tests. Built from the library's two pieces, it lets
a test check them against published numbers and a textbook formula, and rank plain token lists
(what `index_text` and `tokenize` make of messages) without a store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from durable_recall.index import Bm25Params, idf, score_term

__all__ = ('rank',)


def rank(
    query_terms: Iterable[str],
    docs_term_freqs: Sequence[Mapping[str, int]],
    doc_lengths: Sequence[int],
    params: Bm25Params | None = None,
) -> list[tuple[int, float]]:
    """`(document index, score)` for documents scoring above 0, best first, ties in corpus order.

    A repeated query term counts once, as in a search. Documents without text still count toward
    N and the average length, and never score.
    """
    assert len(doc_lengths) == len(docs_term_freqs)
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
