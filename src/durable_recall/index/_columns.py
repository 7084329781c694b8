"""A common term's postings as numpy columns, decoded in a few array operations rather than a loop a posting.

A word found in tens of thousands of messages has hundreds of sealed chunks. Decoded into a
`Chunk` (a Python int per key, lists concatenated), it cost about 25 ms for 70,000 postings, on
top of DEFLATE; then every posting's BM25 share was added up in Python. Here the chunks'
inflated columns are joined and read as arrays at once: keys (`run_key << 32 | position`,
uint64), term frequencies and lengths (float64, exact for every count an index holds), sorted by
key, which `_array_scoring` scores with array arithmetic.

numpy is imported only here and in `_array_scoring`, inside the functions, and only for terms of at
least `MIN_ROWS` rows: a small store's search (and a process that never meets a common word,
such as a command line that lists runs) never pays its import (0.1 to 0.3 s).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._chunks import OPEN, Chunk, decode_chunk, merged, sealed_columns
from ._storage import PostingsRow

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ('MIN_ROWS', 'Columns', 'common_term', 'decode_columns', 'term_postings')

MIN_ROWS = 32
"""Rows (chunks) from which a term's postings are decoded into `Columns` (about 2,000 postings or more).

Below it the Python `Chunk` costs a few milliseconds at most, and no term of a conversation of a
thousand messages reaches it (a word in every one of them has 17 rows), so a store that size is
searched without importing numpy (0.1 to 0.3 s)."""

_KINDS = {2: '<u2', 4: '<u4'}

_Body = tuple[bytes, int, tuple[int, int, int]]
"""A sealed chunk's inflated body, postings count and column widths (`sealed_columns`)."""

_KEY_MAX = 2**64 - 1


class Columns:
    """A term's postings as aligned arrays sorted by document key: what `_array_scoring` scores.

    Attributes:
        keys: Document keys (`run_key << 32 | position`), uint64, increasing.
        tfs: Term frequencies, as float64.
        lengths: Document lengths, as float64.
    """

    __slots__ = ('gains', 'keys', 'lengths', 'tfs')

    def __init__(self, keys: NDArray[np.uint64], tfs: NDArray[np.float64], lengths: NDArray[np.float64]) -> None:
        self.keys = keys
        self.tfs = tfs
        self.lengths = lengths
        self.gains: dict[tuple[float, float, float, float], tuple[NDArray[np.uint64], NDArray[np.float64]]] = {}
        """The scorer's memo: `(idf, avgdl, k1, b)` -> the keys that score and their BM25 shares."""

    def __len__(self) -> int:
        return len(self.keys)

    def run_range(self, run_key: int) -> tuple[int, int]:
        """The slice of postings that belong to `run_key`."""
        import numpy as np

        start = int(np.searchsorted(self.keys, np.uint64(run_key << 32)))
        end = (run_key + 1) << 32
        # Past the last run key a key holds, every key is below the end.
        return start, len(self.keys) if end > _KEY_MAX else int(np.searchsorted(self.keys, np.uint64(end)))


def common_term(rows: Sequence[PostingsRow]) -> bool:
    """Whether a term's rows are many enough (`MIN_ROWS`) to decode into `Columns`."""
    return len(rows) >= MIN_ROWS


def term_postings(rows: Sequence[PostingsRow], *, columns: bool = True) -> Chunk | Columns:
    """A term's rows as one sorted `Chunk`, or as `Columns` when there are at least `MIN_ROWS` of them.

    Args:
        rows: The term's rows in a scope.
        columns: Whether numpy may be used (`False`: always a `Chunk`, and numpy is not imported).
    """
    if columns and common_term(rows):
        return decode_columns(rows)
    return merged([decode_chunk(row.chunk, row.postings) for row in rows])


def decode_columns(rows: Sequence[PostingsRow]) -> Columns:
    """A term's rows (sealed chunks and its open tail) as `Columns`.

    Raises:
        ValueError: A row does not decode (as `decode_chunk` raises, and `zlib.error` for a body
            that does not inflate).
    """
    import numpy as np

    bodies: list[_Body] = []
    tails: list[Chunk] = []
    for row in rows:
        if row.chunk == OPEN:
            tails.append(decode_chunk(OPEN, row.postings))  # the newest postings: after the sealed ones
        else:
            found = sealed_columns(row.postings)
            if found[1]:
                bodies.append(found)
    counts = np.array([count for _, count, _ in bodies], dtype=np.int64)
    keys: NDArray[np.uint64] = np.zeros(0, dtype=np.uint64)
    columns: list[NDArray[Any]] = [np.zeros(0, dtype=np.float64)] * 2
    if bodies:
        deltas = _column(bodies, lambda count, widths: (0, 4)).astype(np.int64)
        # Each chunk's first delta is its first run key itself: undo the running sum of the chunks before it.
        sums = np.cumsum(deltas)
        starts = np.cumsum(counts) - counts
        runs = sums - np.repeat(sums[starts] - deltas[starts], counts)
        positions = _column(bodies, lambda count, widths: (4 * count, widths[0]))
        keys = (runs.astype(np.uint64) << np.uint64(32)) | positions.astype(np.uint64)
        columns = [
            _column(bodies, lambda count, widths: ((4 + widths[0]) * count, widths[1])).astype(np.float64),
            _column(bodies, lambda count, w: ((4 + w[0] + w[1]) * count, w[2])).astype(np.float64),
        ]
    for tail in tails:
        if tail.keys:
            keys = np.concatenate((keys, np.array(tail.keys, dtype=np.uint64)))
            columns = [
                np.concatenate((columns[0], np.array(tail.tfs, dtype=np.float64))),
                np.concatenate((columns[1], np.array(tail.lengths, dtype=np.float64))),
            ]
    tfs, lengths = columns
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        # Chunks whose ranges overlap (a run caught up again, or indexed anew): sort, as `merged` does.
        order = np.argsort(keys, kind='stable')
        keys, tfs, lengths = keys[order], tfs[order], lengths[order]
    return Columns(keys, tfs, lengths)


def _column(bodies: Sequence[_Body], where: Callable[[int, tuple[int, int, int]], tuple[int, int]]) -> NDArray[Any]:
    """One column of every chunk, joined: a single array read when every chunk has the column's width.

    `where(count, widths)` gives the column's byte offset in a body and its width.
    """
    import numpy as np

    spans = [(body, count, *where(count, widths)) for body, count, widths in bodies]
    kinds = {width for _, _, _, width in spans}
    if len(kinds) == 1:
        width = kinds.pop()
        joined = b''.join(body[offset : offset + width * count] for body, count, offset, width in spans)
        return np.frombuffer(joined, dtype=_KINDS[width])
    parts = [np.frombuffer(body, _KINDS[width], count, offset).astype(np.int64) for body, count, offset, width in spans]
    return np.concatenate(parts)
