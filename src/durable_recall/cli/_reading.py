"""Read one run back the way the search sees it: its snapshots, and the record rebuilt from them.

The record is folded from the run's complete snapshots, in order, by the same `RecordBuilder` that
`SnapshotHistorySource` uses, so `show` displays exactly the messages (and positions) that search
results number. Interrupted snapshots are counted but not folded, as the source does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..base import RunRecord, SnapshotState
from ..history import RecordBuilder
from ..stores import StepStore
from ._errors import CliError

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('RunSummary', 'SnapshotInfo', 'read_run', 'require_run')


@dataclass(frozen=True)
class SnapshotInfo:
    """One stored snapshot, without its messages."""

    index: int
    step_index: int
    state: SnapshotState
    saved_at: datetime
    size: int


@dataclass(frozen=True)
class RunSummary:
    """A run, its snapshots, and its rebuilt record."""

    run: RunRecord
    snapshots: tuple[SnapshotInfo, ...]
    record: tuple[ModelMessage, ...]

    @property
    def snapshot_sizes(self) -> list[int]:
        """How many messages each snapshot holds, in order."""
        return [snapshot.size for snapshot in self.snapshots]

    @property
    def complete(self) -> int:
        """Snapshots in which every tool call has its return."""
        return sum(snapshot.state == 'complete' for snapshot in self.snapshots)

    @property
    def interrupted(self) -> int:
        """Snapshots with an unanswered tool call (not part of the record)."""
        return len(self.snapshots) - self.complete

    @property
    def record_size(self) -> int:
        """Messages in the rebuilt record."""
        return len(self.record)

    @property
    def last_saved_at(self) -> datetime | None:
        """When the newest snapshot was written."""
        return max((snapshot.saved_at for snapshot in self.snapshots), default=None)


async def require_run(store: StepStore, run_id: str, where: str) -> RunRecord:
    """The run's record, or a `CliError` naming the store when it has no such run."""
    run = await store.get_run(run_id)
    if run is None:
        raise CliError(f'no run {run_id!r} in {where}: `durable-recall runs` lists the run ids')
    return run


async def read_run(store: StepStore, run: RunRecord | str) -> RunSummary:
    """Read every snapshot of `run` (a record, or a run id) and rebuild its record.

    Raises:
        CorruptSnapshotError: A snapshot cannot be decoded.
        CliError: `run` is an id the store does not know.
    """
    if isinstance(run, str):
        run = await require_run(store, run, 'the store')
    snapshots = await store.list_snapshots(run.run_id, include_interrupted=True)
    builder = RecordBuilder()
    for snapshot in snapshots:
        if snapshot.state == 'complete':
            builder.fold(snapshot.messages)
    infos = tuple(
        SnapshotInfo(snapshot.index, snapshot.step_index, snapshot.state, snapshot.saved_at, len(snapshot.messages))
        for snapshot in snapshots
    )
    return RunSummary(run=run, snapshots=infos, record=builder.messages)
