"""An in-process store: for tests, scripts and single-process agents that need no durability."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio
from pydantic_ai.messages import ModelMessage

from .._codec import MessageDecodeError, load_messages
from .._errors import CorruptSnapshotError, RunIdConflictError, SnapshotChainError
from .._records import RunRecord, RunRegistration, Snapshot, SnapshotDelta, SnapshotState
from ._chain import LogRange, inline_base, resolve_delta
from ._memory_index import MemoryIndex
from ._rows import format_timestamp

__all__ = ('InMemoryStepStore',)


@dataclass
class _StoredSnapshot:
    index: int
    step_index: int
    state: SnapshotState
    saved_at: datetime
    ranges: list[LogRange]


@dataclass
class _Run:
    record: RunRecord
    log: list[str] = field(default_factory=list[str])
    snapshots: list[_StoredSnapshot] = field(default_factory=list[_StoredSnapshot])


class InMemoryStepStore:
    """Keeps runs and snapshots in this process, with the same layout and rules as the durable stores.

    Not shared between processes: a Temporal worker and its starter each see their own.
    """

    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}
        self._lock = anyio.Lock()
        self._index = MemoryIndex(self._run_order)

    def __repr__(self) -> str:
        return f'InMemoryStepStore(runs={len(self._runs)})'

    async def register_run(self, registration: RunRegistration) -> RunRecord:
        async with self._lock:
            existing = self._runs.get(registration.run_id)
            if existing is not None:
                if existing.record.token != registration.token:
                    raise RunIdConflictError(registration.run_id)
                return existing.record
            record = registration.record(datetime.now(UTC))
            self._runs[registration.run_id] = _Run(record)
            return record

    async def get_run(self, run_id: str) -> RunRecord | None:
        run = self._runs.get(run_id)
        return run.record if run else None

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

    async def save_snapshot(self, delta: SnapshotDelta) -> bool:
        async with self._lock:
            run = self._runs.get(delta.run_id)
            if run is None:
                raise SnapshotChainError(f'run {delta.run_id!r} is not registered; register it before saving snapshots')
            if delta.index < len(run.snapshots):
                return False
            if delta.index != len(run.snapshots):
                raise SnapshotChainError(
                    f'snapshot {delta.index} of run {delta.run_id!r} follows snapshot {len(run.snapshots) - 1}'
                )
            if delta.base_run_id is not None:
                delta = inline_base(delta, self._bodies(delta.base_run_id, delta.base_index))
            previous = run.snapshots[-1].ranges if run.snapshots else None
            resolved = resolve_delta(delta, previous, len(run.log))
            run.log.extend(delta.messages)
            run.snapshots.append(
                _StoredSnapshot(delta.index, delta.step_index, delta.state, datetime.now(UTC), resolved.ranges)
            )
            self._index.mark_pending(delta.run_id, run.record.conversation_id, delta.index)
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
            return len(doomed)

    async def read_messages(self, run_id: str, seqs: Sequence[int]) -> dict[int, ModelMessage]:
        run = self._runs.get(run_id)
        if run is None:
            return {}
        wanted = sorted({seq for seq in seqs if 0 <= seq < len(run.log)})
        try:
            messages = load_messages([run.log[seq] for seq in wanted])
        except MessageDecodeError as error:
            raise CorruptSnapshotError(run_id, -1, str(error)) from error
        return dict(zip(wanted, messages, strict=True))

    def index_storage(self) -> MemoryIndex:
        return self._index

    async def aclose(self) -> None:
        return None

    def _run_order(self, run_id: str) -> tuple[str, str] | None:
        run = self._runs.get(run_id)
        return None if run is None else (format_timestamp(run.record.started_at), run_id)

    def _bodies(self, run_id: str, index: int | None) -> list[str] | None:
        run = self._runs.get(run_id)
        if run is None or index is None or not 0 <= index < len(run.snapshots):
            return None
        return [body for first, end in run.snapshots[index].ranges for body in run.log[first:end]]

    def _decode(self, run: _Run, stored: _StoredSnapshot, decoded: dict[int, ModelMessage] | None = None) -> Snapshot:
        decoded = {} if decoded is None else decoded
        seqs = [seq for first, end in stored.ranges for seq in range(first, end)]
        missing = [seq for seq in seqs if seq not in decoded]
        try:
            decoded.update(zip(missing, load_messages([run.log[seq] for seq in missing]), strict=True))
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
        )
