"""What one search found, as data (for the CLI's `--json`) and as the answer string the model reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from . import _answer
from ._hits import Hit

__all__ = ('Outcome',)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What one search found.

    Attributes:
        fixed: The whole answer when the search did not rank (no conversation, no terms, ...).
        query: The query as searched.
        total: Messages searched.
        hits: The hits the blocks show, in the blocks' order (a block may show several).
        terms: The query's distinct terms.
        rarity: Each term's idf in the scope.
        unreadable: Runs (or snapshots of them) that could not be read, named in the answer.
        blocks: The rendered blocks of `hits` (hits an earlier block already showed have none).
        count: How many hits the search chose in all (those `blocks` show, and those left out).
        notes: Other notes the answer ends with (a hybrid search whose embedder failed).
        matched: Every matching message, counted apart from windows, `max_matches` and the budget,
            when the search was asked to count them (`SearchEngine.rank(count_matches=True)`); the
            answer's header then says `N of M matches`.
    """

    fixed: str | None = None
    query: str = ''
    total: int = 0
    hits: list[Hit] = field(default_factory=list[Hit])
    terms: list[str] = field(default_factory=list[str])
    rarity: Mapping[str, float] = field(default_factory=dict[str, float])
    unreadable: list[str] = field(default_factory=list[str])
    blocks: list[str] = field(default_factory=list[str])
    count: int = 0
    notes: list[str] = field(default_factory=list[str])
    matched: int | None = None

    def answer(self, max_result_bytes: int) -> str:
        """The text the model reads, within `max_result_bytes` of UTF-8."""
        note = _answer.note_for(self.unreadable, max_result_bytes) + ''.join(f'\n\n{text}' for text in self.notes)
        if self.fixed is not None:
            return _answer.fit(self.fixed + note, max_result_bytes)
        max_bytes = max_result_bytes - len(note.encode())
        text = _answer.format_blocks(
            self.query, self.total, self.blocks, count=self.count, max_bytes=max_bytes, matched=self.matched
        )
        return text + note

    def shown(self, max_result_bytes: int) -> int:
        """How many of `hits` the answer within `max_result_bytes` shows as blocks (0 for a fixed answer)."""
        if self.fixed is not None:
            return 0
        note = _answer.note_for(self.unreadable, max_result_bytes) + ''.join(f'\n\n{text}' for text in self.notes)
        max_bytes = max_result_bytes - len(note.encode())
        kept = _answer.shown_blocks(
            self.query, self.total, self.blocks, count=self.count, max_bytes=max_bytes, matched=self.matched
        )
        return sum(map(_answer.hits_in, self.blocks[:kept]))
