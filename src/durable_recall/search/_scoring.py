"""BM25 over stored postings: which postings of a term count in a search, and what they score.

Pure arithmetic on decoded postings, kept apart from where they come from: the same expression,
in the same order of operations, as `score_term`, so the index and the in-memory corpus produce
bit-identical scores.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ._bm25 import Bm25Params

__all__ = ('IndexedRunView', 'Match', 'add_scores', 'run_matches', 'scope_matches')


@dataclass(frozen=True, eq=False)
class IndexedRunView:
    """What ranking needs of one indexed run: its key, place in scope, inherited head and lengths."""

    run_key: int
    run_id: str
    order: int
    first: int
    lengths: Sequence[int]


Postings = list[tuple[IndexedRunView, Sequence[int], Sequence[int]]]
"""A term's postings in a scope: per run, positions (increasing) and term frequencies."""

Match = tuple[IndexedRunView, Sequence[int], Sequence[int], Sequence[int], int, int]
"""`(run, positions, tfs, lengths by position, start, end)`: the postings `start:end` count."""


def scope_matches(postings: Postings) -> list[Match]:
    """A term's postings that count in a scope search: each run's own positions, from `first` on."""
    matches: list[Match] = []
    for run, positions, tfs in postings:
        start = bisect_left(positions, run.first)
        end = bisect_left(positions, len(run.lengths))
        if start < end:
            matches.append((run, positions, tfs, run.lengths, start, end))
    return matches


def run_matches(
    run: IndexedRunView, head: Sequence[Counter[str]], term: str, postings: Postings, size: int
) -> list[Match]:
    """A term's matches in one run's whole record: its inherited head (terms read back) and its own postings."""
    found = [(position, counts[term], counts.total()) for position, counts in enumerate(head) if counts[term]]
    for owner, positions, tfs in postings:
        if owner is run:
            start, end = bisect_left(positions, run.first), bisect_left(positions, len(run.lengths))
            found += [(positions[i], tfs[i], run.lengths[positions[i]]) for i in range(start, end)]
    if not found:
        return []
    lengths = [0] * size
    for position, _, length in found:
        lengths[position] = length
    return [(run, [f[0] for f in found], [f[1] for f in found], lengths, 0, len(found))]


def add_scores(
    scores: dict[tuple[IndexedRunView, int], float],
    matches: Sequence[Match],
    idf: float,
    avgdl: float,
    params: Bm25Params,
) -> None:
    """Add one term's BM25 contribution to each matching document's score."""
    if avgdl <= 0:
        return
    k1, b = params.k1, params.b
    for run, positions, tfs, lengths, start, end in matches:
        for index in range(start, end):
            tf, dl = tfs[index], lengths[positions[index]]
            if tf <= 0 or dl <= 0:
                continue
            gain = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
            if gain > 0:
                key = (run, positions[index])
                scores[key] = scores.get(key, 0.0) + gain
