"""`top_scores` with array arithmetic: the same BM25 floats, for queries of common words.

Adding a word's share to tens of thousands of documents one by one in Python costs milliseconds
per word. Here each term's shares are one array expression, written as `score_term` writes it,
in the same order of operations (numpy's float64 operations round as Python's do, one operation
at a time), and a document's shares are added in `term_order`, starting from 0.0, as the Python
scorer adds them: every score is the same float to the last bit.

Pruning is MaxScore's, per posting: a term's bound is its largest share (exact, from its
arrays, rather than `idf * (k1 + 1)`), and once `k` documents are scored, a posting of a
document not scored yet is skipped when even that share plus every later term's bound stays
below the `k`-th best so far; a document already scored is dropped on the same condition. A term
that cannot lift any new document (its bound is below the cut) is only looked up for the
documents still in the running.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._bm25 import Bm25Params
from ._chunks import Chunk
from ._columns import Columns

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ('MARGIN', 'vector_top_scores')

MARGIN = 1e-9
"""Relative slack on every cut, so float rounding of the bounds' sums stays on the safe side."""

_Terms = Sequence[tuple[str, float, Sequence[tuple[Chunk | Columns, int, int]]]]


def vector_top_scores(ordered: _Terms, avgdl: float, params: Bm25Params, k: int | None) -> dict[int, float]:
    """`top_scores` over terms already in `term_order`; with `k`, only documents scoring at least the `k`-th best.

    Every score returned is exact; with `k`, every document that ties or beats the `k`-th best is
    returned (so ties resolve in corpus order), and no other.
    """
    import numpy as np

    if avgdl <= 0:
        return {}
    shares = [_shares(matches, idf, avgdl, params) for _, idf, matches in ordered]
    bounds = [float(gains.max()) if len(gains) else 0.0 for _, gains in shares]
    remaining = [sum(bounds[index:]) for index in range(len(bounds) + 1)]
    keys: NDArray[np.uint64] = np.zeros(0, dtype=np.uint64)
    scores: NDArray[np.float64] = np.zeros(0, dtype=np.float64)
    threshold: float | None = None
    for index, (term_keys, gains) in enumerate(shares):
        rest = remaining[index + 1]
        # A document this term would add scores at most its share plus `rest` in the end.
        entry = -math.inf if threshold is None else threshold - rest - abs(threshold) * MARGIN
        if not len(term_keys):
            pass
        elif bounds[index] < entry:
            # No posting of this term can lift a new document into the running: look the ones in it up.
            found = np.minimum(np.searchsorted(term_keys, keys), len(term_keys) - 1)
            hit = term_keys[found] == keys
            scores[hit] += gains[found[hit]]
        else:
            if entry > -math.inf and len(keys):
                known = keys[np.minimum(np.searchsorted(keys, term_keys), len(keys) - 1)] == term_keys
                wanted = known | (gains >= entry)
                term_keys, gains = term_keys[wanted], gains[wanted]
            keys, scores = _added(keys, scores, term_keys, gains)
        if k is not None and len(scores) >= k:
            threshold = _kth(scores, k)
            cut = threshold - rest - abs(threshold) * MARGIN
            if cut > 0:
                kept = scores >= cut
                keys, scores = keys[kept], scores[kept]
    if k is not None and len(scores) > k:
        kept = scores >= _kth(scores, k)
        keys, scores = keys[kept], scores[kept]
    return dict(zip(keys.tolist(), scores.tolist(), strict=True))


def _kth(scores: NDArray[np.float64], k: int) -> float:
    """The `k`-th best score (there are at least `k`)."""
    import numpy as np

    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


def _added(
    keys: NDArray[np.uint64], scores: NDArray[np.float64], term_keys: NDArray[np.uint64], gains: NDArray[np.float64]
) -> tuple[NDArray[np.uint64], NDArray[np.float64]]:
    """The scores with a term's shares added: a document's earlier sum first, then the share, as Python adds."""
    import numpy as np

    if not len(keys):
        return term_keys.copy(), gains.copy()  # later terms add to them in place: never to a term's memo
    both = np.concatenate((keys, term_keys))
    order = np.argsort(both, kind='stable')  # two sorted runs: a merge; a document's earlier sum sorts first
    both = both[order]
    values = np.concatenate((scores, gains))[order]
    starts = np.flatnonzero(np.concatenate(([True], both[1:] != both[:-1])))
    return both[starts], np.add.reduceat(values, starts)


def _shares(
    matches: Sequence[tuple[Chunk | Columns, int, int]], idf: float, avgdl: float, params: Bm25Params
) -> tuple[NDArray[np.uint64], NDArray[np.float64]]:
    """A term's scoring documents, increasing, and each one's BM25 share (`score_term`, as an array expression)."""
    import numpy as np

    whole: Columns | None = None
    if len(matches) == 1:
        first, start, end = matches[0]
        if isinstance(first, Columns) and start == 0 and end == len(first):
            whole = first
    memo = (idf, avgdl, params.k1, params.b)
    if whole is not None and memo in whole.gains:
        return whole.gains[memo]
    parts: list[tuple[NDArray[np.uint64], NDArray[np.float64], NDArray[np.float64]]] = []
    for chunk, start, end in matches:
        if start >= end:
            continue
        if isinstance(chunk, Columns):
            parts.append((chunk.keys[start:end], chunk.tfs[start:end], chunk.lengths[start:end]))
        else:
            parts.append(
                (
                    np.array(chunk.keys[start:end], dtype=np.uint64),
                    np.array(chunk.tfs[start:end], dtype=np.float64),
                    np.array(chunk.lengths[start:end], dtype=np.float64),
                )
            )
    if not parts:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float64)
    keys = np.concatenate([part[0] for part in parts])
    tf = np.concatenate([part[1] for part in parts])
    dl = np.concatenate([part[2] for part in parts])
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        order = np.argsort(keys, kind='stable')
        keys, tf, dl = keys[order], tf[order], dl[order]
    k1, b = params.k1, params.b
    with np.errstate(divide='ignore', invalid='ignore'):
        # `score_term`'s expression, operation for operation.
        gains = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        scoring = (tf > 0) & (dl > 0) & (gains > 0)
    found = (keys[scoring], gains[scoring])
    if whole is not None:
        whole.gains[memo] = found
    return found
