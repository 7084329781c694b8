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
from ._errors import EXIT_USAGE, CliError

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
    """The run whose id is `run_id`, or the one run whose id starts with it.

    Ids are long (a Temporal run id is 73 characters) and `runs` shortens them in the middle: a
    unique prefix names a run as well as the whole id, and so does the shortened id as `runs` prints
    it (`start…end`).

    Raises:
        CliError: No run has that id or prefix (exit 1), or several runs start with it (a usage
            error, exit 2, listing them).
    """
    run = await store.get_run(run_id)
    if run is not None:
        return run
    head, cut, tail = run_id.partition('…')  # as `runs` shortens an id: its start and end around an ellipsis
    found = [
        record
        for record in await store.list_runs()
        if record.run_id.startswith(head) and (not cut or record.run_id.endswith(tail))
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise CliError(f'no run {run_id!r} in {where}: `durable-recall runs` lists the run ids')
    shown = ', '.join(record.run_id for record in found[:_CANDIDATES])
    more = f' and {len(found) - _CANDIDATES} more' if len(found) > _CANDIDATES else ''
    raise CliError(
        f'run id prefix {run_id!r} is ambiguous in {where}: {len(found)} runs start with it ({shown}{more}); '
        'pass more of the id',
        status=EXIT_USAGE,
    )


_CANDIDATES = 8
"""Runs an ambiguous prefix's error lists by id."""


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
