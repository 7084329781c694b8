"""Neighbour weighting: a matching message's score also counts a share of the scores beside it.

In a conversation a topic runs over several turns, and the turn that answers a question is often
next to the turns that use its words rather than among them: "what did the vet say about the
puppy?" matches "The vet saw the puppy today" and "What did the vet say?", and the answer follows.
BM25 scores each message on its own, so a passing mention of the same words ranks as high as the
middle of the passage about them. Here, after BM25 has scored the scope's messages, each message
that matches the query itself scores

    s'(i) = s(i) + w1 * (s(i - 1) + s(i + 1)) + w2 * (s(i - 2) + s(i + 2)) + ...

with `weights` = `(w1, w2, ...)` (`Bm25Params.neighbours`) and `i - 1`, `i + 1`, ... the messages
before and after it in the order a block's window walks them: along the conversation's record
across runs (`Record`), or within the message's run (`smoothed_within`, for store-wide and `run_id`
searches). The block a hit heads then shows the passage. A message without a query word never
becomes a hit: a search answers "no matches" exactly when BM25 does, and a match only in content
an answer withholds (a private tool's output) gives no visible message a place among the hits.

The sums are added in exactly the order written above (`s(i)`, then each distance's pair, before
and after), so an oracle that adds them the same way gets the same floats; the array paths (many
matches) add them in that order too. The weights halve with each step by default, `(0.5, 0.25)`:
the message next door says about the query half of what the match says, the one after a quarter.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ('Record', 'smoothed', 'smoothed_within')

_ARRAYS_FROM = 2048
"""From this many matches the sums are array expressions (the same floats) even if numpy is not loaded yet."""

_ARRAYS_AFTER_IMPORT = 32
"""From this many, array expressions once numpy is loaded (a first search of a small store keeps to Python)."""

_RUN = 32
"""A document key is `run_key << 32 | position`."""


def _arrays(count: int) -> bool:
    return count >= _ARRAYS_FROM or (count >= _ARRAYS_AFTER_IMPORT and 'numpy' in sys.modules)


class Record:
    """A conversation's documents in the order its windows walk them: runs' own positions, run after run.

    `reach` empty slots pad both ends, so a neighbour's slot always exists.
    """

    def __init__(self, segments: Iterable[tuple[int, int, int]], *, reach: int) -> None:
        """Build the record from `(run_key, first, end)` segments: positions `first..end-1` of the run."""
        self.reach = reach
        keys: list[int] = [-1] * reach
        for run_key, first, end in segments:
            if end > first:
                base = run_key << _RUN
                keys += range(base | first, base | end)
        keys += [-1] * reach
        self.keys = keys
        """Each slot's document key, -1 for an empty slot."""
        self.slots = {key: slot for slot, key in enumerate(keys) if key >= 0}
        """Each document's slot."""
        self._arrays: tuple[NDArray[np.uint64], NDArray[np.int64]] | None = None

    def arrays(self) -> tuple[NDArray[np.uint64], NDArray[np.int64]]:
        """The documents' keys, increasing, and each one's slot: for looking many keys up at once."""
        import numpy as np

        if self._arrays is None:
            keys = np.fromiter(self.slots.keys(), dtype=np.uint64, count=len(self.slots))
            slots = np.fromiter(self.slots.values(), dtype=np.int64, count=len(self.slots))
            order = np.argsort(keys, kind='stable')
            self._arrays = (keys[order], slots[order])
        return self._arrays


def smoothed(scores: Mapping[int, float], record: Record, weights: Sequence[float]) -> dict[int, float]:
    """Every matching document's score with its neighbours' shares added, along `record`.

    `record.reach` must be at least `len(weights)`. A scored document the record does not hold (a
    run indexed after the record was listed) keeps its own score and lends none.
    """
    if not scores or not any(weights):
        return dict(scores)
    assert record.reach >= len(weights), 'the record is padded for fewer neighbours'
    if _arrays(len(scores)):
        return _smoothed_arrays(scores, record, weights)
    # Scores laid out by slot (0.0 where nothing scored): a neighbour is then one list index away,
    # not a key lookup and a dict probe. The sums are the same, in the same order.
    slots = record.slots
    dense = [0.0] * len(record.keys)
    placed: list[tuple[int, float, int]] = []
    result: dict[int, float] = {}
    for key, own in scores.items():
        slot = slots.get(key)
        if slot is None:
            result[key] = own
            continue
        dense[slot] = own
        placed.append((key, own, slot))
    steps = tuple(enumerate(weights, start=1))
    for key, own, slot in placed:
        total = own
        for distance, weight in steps:
            total += weight * (dense[slot - distance] + dense[slot + distance])
        result[key] = total
    return result


def smoothed_within(scores: Mapping[int, float], weights: Sequence[float]) -> dict[int, float]:
    """`smoothed` with each run on its own: the neighbours are the positions before and after in the same run.

    Only scored documents lend (the others score 0), and a scored key is a position its run has, so
    no run needs to be read: a key `distance` away is a neighbour when it is scored and in the same run.
    """
    if not scores or not any(weights):
        return dict(scores)
    if _arrays(len(scores)):
        return _within_arrays(scores, weights)
    result: dict[int, float] = {}
    for key, own in scores.items():
        run = key >> _RUN
        total = own
        for distance, weight in enumerate(weights, start=1):
            before = scores.get(key - distance, 0.0) if (key - distance) >> _RUN == run else 0.0
            after = scores.get(key + distance, 0.0) if (key + distance) >> _RUN == run else 0.0
            total += weight * (before + after)
        result[key] = total
    return result


def _smoothed_arrays(scores: Mapping[int, float], record: Record, weights: Sequence[float]) -> dict[int, float]:
    """`smoothed` as array expressions over the record, operation for operation."""
    import numpy as np

    size = len(record.keys)
    keys = np.fromiter(scores.keys(), dtype=np.uint64, count=len(scores))
    own = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    known, known_slots = record.arrays()
    where = np.full(len(keys), -1, dtype=np.int64)
    if len(known):
        found = np.minimum(np.searchsorted(known, keys), len(known) - 1)
        hit = known[found] == keys
        where[hit] = known_slots[found[hit]]
    held = where >= 0
    dense = np.zeros(size, dtype=np.float64)
    slot = where[held]
    dense[slot] = own[held]
    total = own[held]
    for distance, weight in enumerate(weights, start=1):
        total = total + weight * (dense[slot - distance] + dense[slot + distance])
    if bool(held.all()):
        return dict(zip(keys.tolist(), total.tolist(), strict=True))
    result = dict(scores)
    result.update(zip(keys[held].tolist(), total.tolist(), strict=True))
    return result


def _within_arrays(scores: Mapping[int, float], weights: Sequence[float]) -> dict[int, float]:
    """`smoothed_within` as array expressions, operation for operation."""
    import numpy as np

    keys = np.fromiter(scores.keys(), dtype=np.uint64, count=len(scores))
    own = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    order = np.argsort(keys, kind='stable')
    keys, own = keys[order], own[order]
    runs = keys >> np.uint64(_RUN)
    last = len(keys) - 1

    def lent(wanted: NDArray[np.uint64], valid: NDArray[np.bool_]) -> NDArray[np.float64]:
        at = np.minimum(np.searchsorted(keys, wanted), last)
        found = valid & (keys[at] == wanted) & ((wanted >> np.uint64(_RUN)) == runs)
        return np.where(found, own[at], 0.0)

    total = own
    for distance, weight in enumerate(weights, start=1):
        step = np.uint64(distance)
        before = lent(keys - step, keys >= step)
        after = lent(keys + step, keys <= np.uint64(2**64 - 1 - distance))
        total = total + weight * (before + after)
    return dict(zip(keys.tolist(), total.tolist(), strict=True))
