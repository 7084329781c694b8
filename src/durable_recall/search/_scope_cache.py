"""What a ranker keeps of a scope between searches: its statistics, decoded postings and run rows.

All of it is tagged with the scope's generation (see `_ranking`): while no run of the scope is
indexed again, a warm search reuses it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from ..base import RunRecord
from ..index import IndexedRunRow, Postings, decode_floats, decode_ints
from ._damage import DAMAGE, Problems, note_damage
from ._reads import summary_positions
from ._windows import Layout

__all__ = ('CachedRun', 'CachedScope')


@dataclass(eq=False)
class CachedRun:
    """A run of the scope the search had to look at: its index row, record length and (once read) record.

    Its per-position arrays are decoded once and kept with it: a warm search shows the same runs
    again (a chat's answer walks the windows of dozens of runs), and decoding their times, roles
    and log numbers on every search was a fifth of it. An array that does not decode is not kept,
    so every search that needs it notes the damage again.
    """

    row: IndexedRunRow
    size: int
    record: RunRecord | None = None

    # `cached_property` keeps a value only when its getter returns: a damaged array raises every time.

    @cached_property
    def times(self) -> Sequence[float]:
        """Its message time per position (POSIX seconds).

        Raises:
            ValueError: The row's bytes do not decode (one of `DAMAGE`).
        """
        return decode_floats(self.row.times)

    def shown_times(self, problems: Problems) -> Sequence[float]:
        """`times`, or none (and the damage noted in `problems`) when they do not decode: what an answer shows."""
        try:
            return self.times
        except DAMAGE as error:
            note_damage(problems, f'the message times of run {self.row.run_id!r} do not decode ({error})')
            return []

    @cached_property
    def seqs(self) -> Sequence[int]:
        """Its log number per position.

        Raises:
            ValueError: The row's bytes do not decode (one of `DAMAGE`).
        """
        return decode_ints(self.row.seqs)

    @cached_property
    def roles(self) -> Sequence[int]:
        """Its role code per position.

        Raises:
            ValueError: The row's bytes do not decode (one of `DAMAGE`).
        """
        return decode_ints(self.row.roles)

    @cached_property
    def summaries(self) -> frozenset[int]:
        """Its positions that hold compaction summaries (`summary_positions`)."""
        return summary_positions(self.row)

    @property
    def order(self) -> tuple[str, str]:
        """Corpus order: runs oldest first, ties by run id (as `list_runs` gives them)."""
        return self.row.started_at, self.row.run_id


@dataclass
class CachedScope:
    """A scope as of one generation: its statistics, the postings and runs searches have read, its layout."""

    generation: str
    docs: int
    length: int
    terms: OrderedDict[str, Postings] = field(default_factory=OrderedDict[str, Postings])
    runs: dict[int, CachedRun] = field(default_factory=dict[int, CachedRun])
    layout: Layout | None = None
