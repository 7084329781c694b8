"""What a search ranks and what an answer shows: candidates from postings, hits with their windows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pydantic_ai.messages import ModelMessage

from ..base import RunRecord
from ._damage import time_at
from ._shown import Shown

__all__ = ('Candidate', 'Doc', 'Hit', 'Line', 'assemble')

Doc = tuple[int, int]
"""A document: `(run key, position)`."""


class Line(NamedTuple):
    """One message a block shows.

    Attributes:
        run: The record of the run whose position it is.
        run_key: That run's key in the index.
        position: Its position in that run's record (the number the block shows).
        shown: The message, as the answer renders it.
        time: When it was said, as POSIX seconds (its run's start when it carries no time).
    """

    run: RunRecord
    run_key: int
    position: int
    shown: Shown
    time: float

    @property
    def message(self) -> ModelMessage:
        """The message (decoded from its stored JSON on first use, if it was shown from it)."""
        return self.shown.message


@dataclass(frozen=True)
class Candidate:
    """A scored document, before anything of its run is read back.

    Attributes:
        run_id: Its run.
        run_key: The run's key in the index: with `position`, the document's identity.
        first: The first position searched under the run (positions before it were inherited
            from an earlier run of the conversation); 0 for a `run_id` search.
        size: The run's record length.
        position: The message's position in the run's record.
        score: Its BM25 score.
    """

    run_id: str
    run_key: int
    first: int
    size: int
    position: int
    score: float

    def window(self, context_lines: int) -> range:
        """The positions a block around this document shows."""
        return range(max(self.first, self.position - context_lines), min(self.size, self.position + context_lines + 1))


@dataclass(frozen=True)
class Hit:
    """A ranked message as an answer shows it: its run's record and the messages of its window.

    Attributes:
        candidate: What ranking found.
        run: The run's record.
        lines: The messages of its window that still read, in order (the hit's own among them;
            in a conversation-scoped search, some may be of neighbouring runs).
    """

    candidate: Candidate
    run: RunRecord
    lines: tuple[Line, ...]

    @property
    def position(self) -> int:
        """The message's position in its run's record."""
        return self.candidate.position

    @property
    def score(self) -> float:
        """Its BM25 score."""
        return self.candidate.score

    @property
    def own(self) -> Line:
        """The line of the matching message."""
        found = self.candidate
        return next(line for line in self.lines if (line.run_key, line.position) == (found.run_key, found.position))

    @property
    def message(self) -> ModelMessage:
        """The matching message."""
        return self.own.message

    @property
    def time(self) -> float:
        """When the matching message was said, as POSIX seconds."""
        return self.own.time


def assemble(
    candidates: Sequence[Candidate],
    windows: Sequence[tuple[Doc, ...]],
    records: Mapping[int, RunRecord],
    read: Mapping[int, Mapping[int, Shown]],
    times: Mapping[int, Sequence[float]],
) -> list[Hit]:
    """The candidates as hits with the messages of their windows that read (one window per candidate).

    A candidate whose own message did not read (its run is gone, or the message is unreadable)
    is dropped; a neighbour that did not read is left out of its window.

    Args:
        candidates: The ranked candidates, best first.
        windows: Each candidate's documents, in record order.
        records: The runs' records, by run key.
        read: The messages read, by run key then position.
        times: Each run's message times (`time_at` reads them).
    """
    hits: list[Hit] = []
    for found, window in zip(candidates, windows, strict=True):
        if found.position not in read.get(found.run_key, {}):
            continue
        lines = [
            Line(records[key], key, position, read[key][position], time_at(times[key], position))
            for key, position in window
            if position in read.get(key, {})
        ]
        hits.append(Hit(found, records[found.run_key], tuple(lines)))
    return hits
