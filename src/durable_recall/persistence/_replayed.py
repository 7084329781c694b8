"""Telling a replayed save from a reused run id: a stored snapshot index must hold the same content.

A delta's `(run_id, index)` is its idempotency key, so a store ignores a delta whose index it
already holds: that is how a retried save (a Temporal activity retry, a DBOS step re-run after a
crash) stays a no-op. The same key also lets a *different* run that claims an explicit run id
(`agent.run(..., run_id='same')` twice, or a retry of a failed run under its old id) be ignored
without a word, and its history lost. So a delta the store did not take is checked against what
the store holds at its index: the snapshot it would assemble must have the same content hashes
(`durable_recall.history.message_hashes`, which leave out the timestamps a re-execution stamps
anew). Otherwise the run id is reused, and `RunIdConflictError` says so.

The check reads back only on that path (a store normally takes every delta), so it costs nothing
on the common one.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage

from ..base import RunIdConflictError, Snapshot, SnapshotDelta, load_messages
from ..history import message_hashes
from ..stores import StepStore

__all__ = ('check_replayed',)


async def check_replayed(store: StepStore, deltas: Sequence[SnapshotDelta]) -> None:
    """Check deltas a store did not take (their index was already stored) against what it holds.

    Raises:
        RunIdConflictError: A delta would store other content than the run already holds at its
            index: the run id is being reused by another run.
    """
    by_run: dict[str, list[SnapshotDelta]] = {}
    for delta in deltas:
        by_run.setdefault(delta.run_id, []).append(delta)
    for run_id, run_deltas in by_run.items():
        first = min(delta.index for delta in run_deltas)
        stored = {
            snapshot.index: snapshot
            for snapshot in await store.list_snapshots(run_id, include_interrupted=True, after=first - 2)
        }
        for delta in sorted(run_deltas, key=lambda delta: delta.index):
            held = stored.get(delta.index)
            if held is None:  # the store said it held the index; a concurrent delete took it since
                continue
            previous = await _previous(store, delta, stored)
            if previous is None or message_hashes(_assemble(delta, previous)) != message_hashes(held.messages):
                raise RunIdConflictError(
                    run_id,
                    f'snapshot {delta.index} of run {run_id!r} is already stored with other content',
                )


async def _previous(store: StepStore, delta: SnapshotDelta, stored: dict[int, Snapshot]) -> list[ModelMessage] | None:
    """The snapshot the delta's copy segments refer to (`None` if the store no longer has it)."""
    if delta.base_run_id is not None and delta.base_index is not None:
        found = await store.list_snapshots(delta.base_run_id, include_interrupted=True, after=delta.base_index - 1)
        base = next((snapshot for snapshot in found if snapshot.index == delta.base_index), None)
        return None if base is None else list(base.messages)
    if delta.index == 0:
        return []
    previous = stored.get(delta.index - 1)
    return None if previous is None else list(previous.messages)


def _assemble(delta: SnapshotDelta, previous: Sequence[ModelMessage]) -> list[ModelMessage]:
    """The snapshot the delta describes: copies of the previous snapshot's positions and its new messages."""
    fresh = iter(load_messages(delta.messages))
    out: list[ModelMessage] = []
    for start, end in delta.segments:
        if start >= 0:
            out.extend(previous[start:end])
        else:
            out.extend(next(fresh) for _ in range(end))
    return out
