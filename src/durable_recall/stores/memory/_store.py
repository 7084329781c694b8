"""An in-process store: for tests, scripts and single-process agents that need no durability."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio

from ...base import (
    CorruptSnapshotError,
    MessageDecodeError,
    RunRecord,
    RunRegistration,
    Snapshot,
    SnapshotDelta,
    SnapshotState,
    format_timestamp,
    load_messages,
)
from ...index import MemoryVectors
from .._batch_write import chain_gap, unregistered_run
from .._chain import Inherited, LogRange, plan_delta, snapshot_seqs
from .._protocol import ConversationSummary
from .._summaries import summarize_conversations
from ._index import MemoryIndex
from ._keys import MemoryKeys

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('InMemoryStepStore',)


@dataclass
class _StoredSnapshot:
    index: int
    step_index: int
    state: SnapshotState
    saved_at: datetime
    ranges: list[LogRange]


@dataclass(frozen=True)
class _Ref:
    """A log entry inherited from a run of the same conversation: that run's entry holding the body."""

    run_id: str
    seq: int


@dataclass
class _Run:
    record: RunRecord
    log: list[str | _Ref] = field(default_factory=list[str | _Ref])
    snapshots: list[_StoredSnapshot] = field(default_factory=list[_StoredSnapshot])


class InMemoryStepStore(MemoryKeys):
    """Keeps runs and snapshots in this process, with the same layout and rules as the durable stores.

    Not shared between processes: a Temporal worker and its starter each see their own.
    """

    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}
        self._lock = anyio.Lock()
        self._index = MemoryIndex(self._run_order)
        self._vectors = MemoryVectors()
        self._keys = {}

    def __repr__(self) -> str:
        return f'InMemoryStepStore(runs={len(self._runs)})'

    async def register_run(self, registration: RunRegistration) -> RunRecord:
        async with self._lock:
            existing = self._runs.get(registration.run_id)
            if existing is not None:
                if existing.record.token != registration.token:
                    from ...base import RunIdConflictError  # loads pydantic-ai (see base._errors)

                    raise RunIdConflictError(registration.run_id)
                return existing.record
            record = registration.record(datetime.now(UTC))
            self._runs[registration.run_id] = _Run(record)
            return record

    async def get_run(self, run_id: str) -> RunRecord | None:
        run = self._runs.get(run_id)
        return run.record if run else None

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        return {run_id: self._runs[run_id].record for run_id in run_ids if run_id in self._runs}

    async def list_runs(
        self, *, conversation_id: str | None = None, parent_run_id: str | None = None
    ) -> list[RunRecord]:
        records = [
            run.record
            for run in self._runs.values()
            if (conversation_id is None or run.record.conversation_id == conversation_id)
            and (parent_run_id is None or run.record.parent_run_id == parent_run_id)
        ]
        return sorted(records, key=lambda record: (record.started_at, record.run_id))

    async def list_conversations(self) -> list[str]:
        return sorted({run.record.conversation_id for run in self._runs.values() if run.record.conversation_id})

    async def conversation_summaries(self) -> tuple[list[ConversationSummary], int]:
        return summarize_conversations(run.record for run in self._runs.values())

    async def save_snapshot(self, delta: SnapshotDelta) -> bool:
        return (await self._save([delta]))[0]

    async def save_snapshots(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        return await self._save(deltas)

    async def _save(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        async with self._lock:
            # All or nothing: remember where each touched run stood, and cut back to it on an error.
            marks: dict[str, tuple[int, int]] = {}
            try:
                results = [self._save_one(delta, marks) for delta in deltas]
            except BaseException:
                for run_id, (log_size, snapshot_count) in marks.items():
                    run = self._runs[run_id]
                    del run.log[log_size:], run.snapshots[snapshot_count:]
                raise
            for run_id in marks:
                run = self._runs[run_id]
                if run.snapshots:
                    self._index.mark_pending(run_id, run.record.conversation_id, run.snapshots[-1].index)
            return results

    def _save_one(self, delta: SnapshotDelta, marks: dict[str, tuple[int, int]]) -> bool:
        run = self._runs.get(delta.run_id)
        if run is None:
            raise unregistered_run(delta.run_id)
        if delta.index < len(run.snapshots):
            return False
        if delta.index != len(run.snapshots):
            raise chain_gap(delta, len(run.snapshots))
        base = None
        if delta.base_run_id is not None:
            base = self._base(delta.base_run_id, delta.base_index, run.record.conversation_id)
        previous = run.snapshots[-1].ranges if run.snapshots and delta.base_run_id is None else None
        planned = plan_delta(delta, previous, len(run.log), None if base is None else len(base))
        marks.setdefault(delta.run_id, (len(run.log), len(run.snapshots)))
        for entry in planned.entries:
            if isinstance(entry, Inherited):
                assert base is not None, 'plan_delta refuses an inherited entry without a base'
                run.log.append(base[entry.position])
            else:
                run.log.append(entry)
        run.snapshots.append(
            _StoredSnapshot(delta.index, delta.step_index, delta.state, datetime.now(UTC), planned.resolved.ranges)
        )
        return True

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        run = self._runs.get(run_id)
        if run is None:
            return []
        chosen = [
            stored for stored in run.snapshots[max(after + 1, 0) :] if include_interrupted or stored.state == 'complete'
        ]
        # Each log entry is decoded once and shared by every snapshot that holds it.
        decoded: dict[int, ModelMessage] = {}
        return [self._decode(run, stored, decoded) for stored in chosen]

    async def latest_snapshot(self, run_id: str, *, include_interrupted: bool = False) -> Snapshot | None:
        run = self._runs.get(run_id)
        if run is None:
            return None
        for stored in reversed(run.snapshots):
            if include_interrupted or stored.state == 'complete':
                return self._decode(run, stored)
        return None

    async def delete_conversation(self, conversation_id: str) -> int:
        async with self._lock:
            doomed = [rid for rid, run in self._runs.items() if run.record.conversation_id == conversation_id]
            for run_id in doomed:
                del self._runs[run_id]
            self._index.forget(conversation_id, doomed)
            self._vectors.forget(doomed)
            await self.delete_conversation_keys(conversation_id)
            return len(doomed)

    async def read_messages(self, run_id: str, seqs: Sequence[int]) -> dict[int, ModelMessage]:
        run = self._runs.get(run_id)
        if run is None:
            return {}
        wanted = sorted({seq for seq in seqs if 0 <= seq < len(run.log)})
        try:
            messages = load_messages([self._body(run, seq, -1) for seq in wanted])
        except MessageDecodeError as error:
            raise CorruptSnapshotError(run_id, -1, str(error)) from error
        return dict(zip(wanted, messages, strict=True))

    async def read_log_bodies(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, str]]:
        """`read_logs` as JSON text (see `LogBodies`)."""
        out: dict[str, dict[int, str]] = {}
        for run_id, seqs in wanted.items():
            run = self._runs.get(run_id)
            found = (
                {}
                if run is None
                else {seq: self._body(run, seq, -1) for seq in sorted(set(seqs)) if 0 <= seq < len(run.log)}
            )
            if found:
                out[run_id] = found
        return out

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        out: dict[str, dict[int, ModelMessage]] = {}
        for run_id, seqs in wanted.items():
            found = await self.read_messages(run_id, seqs)
            if found:
                out[run_id] = found
        return out

    def index_storage(self) -> MemoryIndex:
        return self._index

    def vector_storage(self) -> MemoryVectors:
        """Message vectors for hybrid ranking, in this process."""
        return self._vectors

    async def aclose(self) -> None:
        return None

    def _run_order(self, run_id: str) -> tuple[str, str] | None:
        run = self._runs.get(run_id)
        return None if run is None else (format_timestamp(run.record.started_at), run_id)

    def _base(self, run_id: str, index: int | None, conversation_id: str | None) -> list[str | _Ref] | None:
        """The entries of another run's snapshot that a first delta builds on, or `None` if there is none.

        Within a conversation an entry is a reference to the entry that holds the body; across
        conversations it is the body itself, so deleting one conversation never breaks another.
        """
        run = self._runs.get(run_id)
        if run is None or index is None or not 0 <= index < len(run.snapshots):
            return None
        shared = run.record.conversation_id == conversation_id
        entries: list[str | _Ref] = []
        for first, end in run.snapshots[index].ranges:
            for seq in range(first, end):
                entry = run.log[seq]
                if shared:
                    entries.append(_Ref(run_id, seq) if isinstance(entry, str) else entry)
                else:
                    entries.append(self._body(run, seq, index))
        return entries

    def _body(self, run: _Run, seq: int, index: int) -> str:
        """The body of a log entry, following its reference.

        Raises:
            CorruptSnapshotError: The reference names a run that is gone.
        """
        entry = run.log[seq]
        if isinstance(entry, str):
            return entry
        owner = self._runs.get(entry.run_id)
        if owner is None or not 0 <= entry.seq < len(owner.log):
            raise CorruptSnapshotError(run.record.run_id, index, f'message {seq} of the run log is missing')
        body = owner.log[entry.seq]
        assert isinstance(body, str), 'a reference names an entry that holds a body'
        return body

    def _decode(self, run: _Run, stored: _StoredSnapshot, decoded: dict[int, ModelMessage] | None = None) -> Snapshot:
        decoded = {} if decoded is None else decoded
        seqs = snapshot_seqs(stored.ranges)
        missing = [seq for seq in seqs if seq not in decoded]
        try:
            bodies = [self._body(run, seq, stored.index) for seq in missing]
            decoded.update(zip(missing, load_messages(bodies), strict=True))
        except MessageDecodeError as error:
            raise CorruptSnapshotError(run.record.run_id, stored.index, str(error)) from error
        messages = [decoded[seq] for seq in seqs]
        return Snapshot(
            run_id=run.record.run_id,
            index=stored.index,
            step_index=stored.step_index,
            state=stored.state,
            saved_at=stored.saved_at,
            messages=messages,
            seqs=seqs,
            bodies=[self._body(run, seq, stored.index) for seq in seqs],
        )
