"""BM25 over a whole in-memory corpus, composed from the library's `idf` and `score_term`.

The library ranks only through its corpus and its persistent index; neither needs a ranking of a
bare list of documents, so this lives with the tests. The documents are taken to be in record
order (a conversation's messages as said), for neighbour weighting (`Bm25Params.neighbours`),
written out here with plain loops. Built from the library's two pieces, it lets
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
    *,
    neighbours: Sequence[float] = (),
) -> list[tuple[int, float]]:
    """`(document index, score)` for documents scoring above 0, best first, ties in corpus order.

    A repeated query term counts once, as in a search. Documents without text still count toward
    N and the average length, and never score. With `neighbours` (the search's
    `Bm25Params.neighbours`), a document that scores then adds `neighbours[d - 1]` times the BM25
    scores of the documents `d` before and after it; without, this is BM25 alone.
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
    own: list[float] = []
    for freqs, dl in zip(docs_term_freqs, doc_lengths, strict=True):
        score = 0.0
        for term, term_idf in zip(terms, idfs, strict=True):
            score += score_term(freqs.get(term, 0), dl, avgdl, term_idf, params)
        own.append(score)
    ranked: list[tuple[int, float]] = []
    for index, score in enumerate(own):
        if score <= 0:
            continue
        total = score
        for distance, weight in enumerate(neighbours, start=1):
            before = own[index - distance] if index >= distance else 0.0
            after = own[index + distance] if index + distance < n_docs else 0.0
            total += weight * (before + after)
        ranked.append((index, total))
    ranked.sort(key=lambda item: -item[1])
    return ranked
