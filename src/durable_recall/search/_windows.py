"""Which messages a block shows around its hit: within the hit's run, or along the conversation's record.

A chat app runs the agent once per exchange, so a run holds one prompt and one reply (after the
history it inherited, which is indexed under the runs that said it). Context that stayed inside
the hit's run would show nothing but the hit's own exchange. In a conversation-scoped search the
window therefore walks the *conversation's record*: each run's own positions (from its `first`
on), runs in corpus order (oldest first, ties by run id), as `scope_spans` lists them. The
messages before and after a hit are then what was said before and after it, across runs.

Rules:

* only a conversation-scoped search walks across runs, and only through runs of that conversation
  (the listing is the scope's own): context never reaches another conversation;
* a `run_id` search and a store-wide search keep each window inside its run, as the positions a
  `run_id` search shows are that run's;
* overlapping windows merge: a message is shown once, in the first block that reaches it (see
  `_answer.render_blocks`).
"""

from __future__ import annotations

from array import array

from ..index import Record, ScopeSpans, array_length
from ._hits import Candidate, Doc

__all__ = ('Layout', 'in_run_window', 'leaves_run')


def in_run_window(found: Candidate, context_lines: int) -> tuple[Doc, ...]:
    """The documents around a candidate within its own run (from the run's `first` on)."""
    return tuple((found.run_key, position) for position in found.window(context_lines))


def leaves_run(found: Candidate, context_lines: int) -> bool:
    """Whether the candidate's window along the record reaches past its own run's positions."""
    return found.position - context_lines < found.first or found.position + context_lines >= found.size


class Layout:
    """A conversation's record as spans of its runs' own positions, in corpus order."""

    def __init__(self, spans: ScopeSpans) -> None:
        """The record's spans from `IndexStorage.scope_spans`, kept as columns (no object per run).

        Raises:
            ValueError: A span's lengths do not say how many positions the run has.
        """
        self._keys = spans.run_keys
        self._firsts = spans.firsts
        self._sizes = array('I', map(_count, spans.lengths))
        self._index = {run_key: index for index, run_key in enumerate(self._keys)}
        self._record: Record | None = None

    def record(self, reach: int) -> Record:
        """The record's documents in the order windows walk them, for neighbour weighting (kept per `reach`)."""
        if self._record is None or self._record.reach != reach:
            segments = zip(self._keys, self._firsts, self._sizes, strict=True)
            self._record = Record(segments, reach=reach)
        return self._record

    def window(self, found: Candidate, context_lines: int) -> tuple[Doc, ...]:
        """`context_lines` documents before the candidate and after it along the record, in order.

        A candidate whose run the listing does not hold (indexed after it was read) keeps to its run.
        """
        index = self._index.get(found.run_key)
        if index is None:
            return in_run_window(found, context_lines)
        before: list[Doc] = []
        after: list[Doc] = []
        for span in range(index, -1, -1):
            run_key, first, size = self._keys[span], self._firsts[span], self._sizes[span]
            top = found.position - 1 if span == index else size - 1
            for position in range(top, first - 1, -1):
                if len(before) >= context_lines:
                    break
                before.append((run_key, position))
            if len(before) >= context_lines:
                break
        for span in range(index, len(self._keys)):
            run_key, first, size = self._keys[span], self._firsts[span], self._sizes[span]
            bottom = found.position + 1 if span == index else first
            for position in range(bottom, size):
                if len(after) >= context_lines:
                    break
                after.append((run_key, position))
            if len(after) >= context_lines:
                break
        return (*reversed(before), (found.run_key, found.position), *after)

    def near(self, run_key: int, context_lines: int) -> list[int]:
        """The runs a window of `context_lines` around any of the run's own documents may reach, both ways.

        A superset (the window's hit may sit anywhere in its run): a search reads their index rows
        with its hits' runs, so that showing the windows reads none.
        """
        index = self._index.get(run_key)
        if index is None:
            return []
        near: list[int] = []
        for step in (-1, 1):
            reach, span = 0, index + step
            while 0 <= span < len(self._keys) and reach < context_lines:
                own = max(self._sizes[span] - self._firsts[span], 0)
                if own:
                    near.append(self._keys[span])
                reach += own
                span += step
        return near


def _count(lengths: bytes) -> int:
    """`array_length`, read straight from the header's second byte when the count fits in it (a chat's runs)."""
    if len(lengths) > 1 and lengths[1] < 0x80:
        return lengths[1]
    return array_length(lengths)
