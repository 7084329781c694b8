"""What `durable-recall check` found: problems, one line each, and what it read."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._text import clean

__all__ = ('Problem', 'Report')


@dataclass(frozen=True)
class Problem:
    """One thing that does not hold up, named by where it is.

    Attributes:
        run_id: The run it is in (`None` for an index scope).
        snapshot: The snapshot it is in (`None` for the run as a whole, or its index).
        scope: `'index'` for a problem of the search index, `None` for the stored history.
        what: What is wrong.
        conversation: For a problem of a scope's index: the conversation (`None`: runs without one).
    """

    run_id: str | None
    snapshot: int | None
    scope: str | None
    what: str
    conversation: str | None = None

    def line(self) -> str:
        """`run <id> snapshot <n>: <what>`, `run <id> index: <what>`, `conversation <id> index: <what>`."""
        if self.run_id is None:
            named = 'runs without a conversation' if self.conversation is None else f'conversation {self.conversation}'
            return f'{clean(named, layout=False)} index: {self.what}'
        where = f'run {clean(self.run_id, layout=False)}'
        if self.snapshot is not None:
            where += f' snapshot {self.snapshot}'
        if self.scope is not None:
            where += f' {self.scope}'
        return f'{where}: {self.what}'


@dataclass
class Report:
    """Problems in the order found, and counts of what was read."""

    problems: list[Problem] = field(default_factory=list[Problem])
    notes: list[str] = field(default_factory=list[str])
    runs: int = 0
    snapshots: int = 0
    bodies: int = 0
    indexed_runs: int = 0
    terms: int = 0
    last_snapshot: dict[str, int] = field(default_factory=dict[str, int])
    """Per run, the highest snapshot index read (damaged ones included)."""
    partial_listing: bool = False
    """The run listing did not decode: runs were found through the index instead (see `_check._records`)."""
    damaged_entries: set[tuple[str, int]] = field(default_factory=set[tuple[str, int]])
    """Log entries named as damaged, `(run, seq)`: where later runs' references to them lead."""
    inherited: dict[tuple[str, int], list[str]] = field(default_factory=dict[tuple[str, int], list[str]])
    """Per damaged entry, the later runs that inherited it (their reads fail on it too; named once)."""

    def add(self, run_id: str, snapshot: int | None, what: str) -> None:
        """A problem of the stored history."""
        self.problems.append(Problem(run_id, snapshot, None, what))

    def index(self, run_id: str, what: str) -> None:
        """A problem of a run's part of the search index."""
        self.problems.append(Problem(run_id, None, 'index', what))

    def scope(self, conversation_id: str | None, what: str) -> None:
        """A problem of a conversation's index as a whole (its statistics, postings naming no run)."""
        self.problems.append(Problem(None, None, 'index', what, conversation_id))
