"""What a search ranks and what an answer shows: candidates from postings, hits with their windows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage

from ..base import RunRecord

__all__ = ('Candidate', 'Hit')


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
        window: The messages the block shows, by position (the hit's own among them).
    """

    candidate: Candidate
    run: RunRecord
    window: Mapping[int, ModelMessage]

    @property
    def position(self) -> int:
        """The message's position in its run's record."""
        return self.candidate.position

    @property
    def score(self) -> float:
        """Its BM25 score."""
        return self.candidate.score

    @property
    def message(self) -> ModelMessage:
        """The matching message."""
        return self.window[self.candidate.position]
