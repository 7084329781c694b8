"""BM25 over stored postings: which postings of a term count in a search, and what they score.

Pure arithmetic on decoded postings, kept apart from where they come from, so every store's index
scores alike. Each posting's gain is `score_term`'s expression written out inline, in the same
order of operations, so the scores are exactly BM25 as `_bm25` defines it, to the last bit.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Sequence

from ._array_scoring import MARGIN, vector_top_scores
from ._bm25 import Bm25Params
from ._chunks import Chunk
from ._columns import Columns

__all__ = (
    'Postings',
    'Match',
    'add_scores',
    'add_scores_to_known',
    'run_matches',
    'scope_matches',
    'term_order',
    'top_scores',
)


Postings = list[Chunk | Columns]
"""A term's postings in a scope: its chunks, each sorted by document key (`Columns` for a common term)."""

Match = tuple[Chunk | Columns, int, int]
"""`(chunk, start, end)`: the chunk's postings `start:end` count."""


def scope_matches(postings: Postings) -> list[Match]:
    """A term's postings that count in a scope search: all of them (only own positions are indexed)."""
    return [(chunk, 0, len(chunk.keys)) for chunk in postings]


def run_matches(run_key: int, head: Sequence[Counter[str]], term: str, postings: Postings) -> list[Match]:
    """A term's matches in one run's whole record: its inherited head (terms read back) and its own postings."""
    base = run_key << 32
    found = [(base | position, counts[term], counts.total()) for position, counts in enumerate(head) if counts[term]]
    matches: list[Match] = []
    if found:
        matches.append((Chunk([f[0] for f in found], [f[1] for f in found], [f[2] for f in found]), 0, len(found)))
    for chunk in postings:
        start, end = chunk.run_range(run_key)
        if start < end:
            matches.append((chunk, start, end))
    return matches


def add_scores(
    scores: dict[int, float],
    matches: Sequence[Match],
    idf: float,
    avgdl: float,
    params: Bm25Params,
) -> None:
    """Add one term's BM25 contribution to each matching document's score.

    Documents are keyed `run_key << 32 | position`: ints, which the garbage collector does not
    track, where a tuple per posting would set off collections over the whole heap.
    """
    if avgdl <= 0:
        return
    k1, b = params.k1, params.b
    for chunk, start, end in matches:
        keys, tfs, lengths = _lists(chunk)
        for index in range(start, end):
            tf, dl = tfs[index], lengths[index]
            if tf <= 0 or dl <= 0:
                continue
            gain = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
            if gain > 0:
                key = keys[index]
                scores[key] = scores.get(key, 0.0) + gain


def add_scores_to_known(
    scores: dict[int, float],
    matches: Sequence[Match],
    idf: float,
    avgdl: float,
    params: Bm25Params,
) -> None:
    """`add_scores`, but only to documents already scored: a term too common to lift a new one into the top."""
    if avgdl <= 0 or not scores:
        return
    k1, b = params.k1, params.b
    postings = sum(end - start for _, start, end in matches)
    if len(scores) * 8 < postings:
        # Few candidates, many postings: look each candidate up in the chunks whose range holds it.
        candidates = sorted(scores)
        for chunk, start, end in matches:
            keys, tfs, lengths = _lists(chunk)
            if start >= end:
                continue
            low = bisect_left(candidates, keys[start])
            high = bisect_right(candidates, keys[end - 1], low)
            for key in candidates[low:high]:
                index = bisect_left(keys, key, start, end)
                if index < end and keys[index] == key:
                    tf, dl = tfs[index], lengths[index]
                    if tf > 0 and dl > 0:
                        gain = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
                        if gain > 0:
                            scores[key] += gain
        return
    for chunk, start, end in matches:
        keys, tfs, lengths = _lists(chunk)
        for index in range(start, end):
            key = keys[index]
            if key not in scores:
                continue
            tf, dl = tfs[index], lengths[index]
            if tf <= 0 or dl <= 0:
                continue
            gain = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
            if gain > 0:
                scores[key] += gain


def top_scores(
    terms: Sequence[tuple[str, float, Sequence[Match]]],
    avgdl: float,
    params: Bm25Params,
    k: int | None,
    *,
    vectorised: bool | None = None,
) -> dict[int, float]:
    """Scores complete for every document that can be among the best `k` (MaxScore pruning).

    A term adds at most `idf * (k1 + 1)` to a document. Terms are taken rarest first; once the
    `k`-th best score so far is above what all the remaining terms could add together, a document
    not scored yet can never reach the best `k` (scores only grow), so the remaining terms only add
    to documents already scored; and a scored document whose score plus that bound is below the
    `k`-th best is dropped, so a common term is looked up for a few candidates rather than added
    to thousands. Every score returned is exact; documents left out score below the `k`-th best
    (or tie it only if already present, so ties resolve as in the full ranking).

    Terms are added in `term_order`, not in the query's order, so a document's score is the same
    float however the query orders its words.

    Args:
        terms: `(term, idf, matches)` per distinct query term.
        avgdl: The scope's mean document length.
        params: `k1` and `b`.
        k: How many of the best documents must be exact and present; `None` scores everything.
        vectorised: Score with numpy (`_array_scoring`); by default when a term's postings are `Columns`
            (a common word), whose arrays the Python loop would read one element at a time.
    """
    ordered = sorted(terms, key=lambda item: term_order(item[0], item[1]))
    if vectorised is None:
        vectorised = any(isinstance(chunk, Columns) for _, _, matches in terms for chunk, _, _ in matches)
    if vectorised:
        return vector_top_scores(ordered, avgdl, params, k)
    bounds = [idf * (params.k1 + 1) for _, idf, _ in ordered]
    remaining = [sum(bounds[index:]) for index in range(len(bounds) + 1)]
    scores: dict[int, float] = {}
    pruning = False
    for index, (_, idf, matches) in enumerate(ordered):
        if pruning:
            add_scores_to_known(scores, matches, idf, avgdl, params)
        else:
            add_scores(scores, matches, idf, avgdl, params)
        if k is not None and len(scores) >= k and index + 1 < len(ordered):
            threshold = heapq.nlargest(k, scores.values())[-1]
            pruning = pruning or remaining[index + 1] < threshold
            if pruning:
                # Below this, even every remaining term at its most cannot lift a document to the
                # k-th best; the margin keeps float rounding of the sums on the safe side.
                cut = threshold - remaining[index + 1] - abs(threshold) * _MARGIN
                scores = {key: score for key, score in scores.items() if score >= cut}
    return scores


_MARGIN = MARGIN


def _lists(chunk: Chunk | Columns) -> tuple[Sequence[int], Sequence[float], Sequence[float]]:
    """A chunk's columns as Python reads them (`Columns` as lists: asked for, the Python scorer reads every element)."""
    if isinstance(chunk, Columns):
        return chunk.keys.tolist(), chunk.tfs.tolist(), chunk.lengths.tolist()
    return chunk


def term_order(term: str, idf: float) -> tuple[float, str]:
    """The order query terms' scores are added in: rarest first, then by term."""
    return (-idf, term)
