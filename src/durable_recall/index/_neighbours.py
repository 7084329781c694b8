"""Neighbour weighting: a message's score also counts a share of the scores of the messages beside it.

In a conversation the words of a question are often not in the message that answers it: "what did
the vet say?" finds "I took Max to the vet on Tuesday", and the answer is the next message ("she
said it's only a sprain"), which holds none of the query's words. BM25 scores each message on its
own, so the answer scores nothing. Here, after BM25 has scored the scope's messages, each message's
score becomes

    s'(i) = s(i) + w1 * (s(i - 1) + s(i + 1)) + w2 * (s(i - 2) + s(i + 2)) + ...

over the messages in the order a block's window walks them (`Record`), with `weights` = `(w1, w2,
...)` (`Bm25Params.neighbours`), for every message that matches the query itself: a message
ranks by what it says and by what was said next to it. A message without a query word never
becomes a hit (its neighbour's block shows it as context): a search answers "no matches" exactly
when BM25 does, and a match only in content an answer withholds (a private tool's output) lends
no visible message a place among the hits. The sums are added in exactly the order written above
(`s(i)`, then each distance's pair, before and after), so an oracle that adds them the same way
gets the same floats; the array path (many matches) adds them in that order too.

Why: on five real long chats (`benchmarks.locomo --matches 10,50`, 759 questions with annotated
evidence turns), the turns that answer a question are often next to the turns that use its words,
and a topic runs over several turns. The weights halve with each step: the message next door says
about the query half of what the match says, the one after that a quarter.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ('Record', 'smoothed')

_ARRAYS_FROM = 2048
"""From this many matches the sums are array expressions (the same floats) even if numpy is not loaded yet."""

_ARRAYS_AFTER_IMPORT = 32
"""From this many, array expressions once numpy is loaded (a first search of a small store keeps to Python)."""


class Record:
    """The documents a search weighs together, in window order: runs' positions, in segments.

    Consecutive segments are contiguous when `joined` (a conversation's record, which windows walk
    across runs), and `reach` empty slots apart otherwise (each run on its own: a neighbour never
    comes from another run). `reach` empty slots also pad both ends, so a neighbour's slot always
    exists.
    """

    def __init__(self, segments: Iterable[tuple[int, int, int]], *, reach: int, joined: bool) -> None:
        """Build the record from `(run_key, first, end)` segments: positions `first..end-1` of the run."""
        self.reach = reach
        keys: list[int] = [-1] * reach
        for run_key, first, end in segments:
            if end <= first:
                continue
            if not joined and len(keys) > reach:
                keys += [-1] * reach
            base = run_key << 32
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
    """Every matching document's score with its neighbours' shares added (see the module docstring).

    `record.reach` must be at least `len(weights)`. A scored document the record does not hold (a
    run indexed after the record was listed) keeps its own score and lends none.
    """
    if not scores or not any(weights):
        return dict(scores)
    assert record.reach >= len(weights), 'the record is padded for fewer neighbours'
    if len(scores) >= _ARRAYS_FROM or (len(scores) >= _ARRAYS_AFTER_IMPORT and 'numpy' in sys.modules):
        return _smoothed_arrays(scores, record, weights)
    keys, slots = record.keys, record.slots
    result: dict[int, float] = {}
    for key, own in scores.items():
        slot = slots.get(key)
        if slot is None:
            result[key] = own
            continue
        total = own
        for distance, weight in enumerate(weights, start=1):
            total += weight * (scores.get(keys[slot - distance], 0.0) + scores.get(keys[slot + distance], 0.0))
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
