"""The storage seam: what `StepPersistence` writes and what a history source reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from ..base import PersistBatch, RunRecord, RunRegistration, Snapshot, SnapshotDelta
from ..index import SnapshotReader

__all__ = ('BatchSaver', 'ConversationSummary', 'ConversationSummaries', 'LogBodies', 'StepStore')


@runtime_checkable
class StepStore(SnapshotReader, Protocol):
    """A durable home for run records and step snapshots.

    Every write is idempotent: registering the same run with the same token, or saving a delta
    whose `(run_id, index)` is already stored, changes nothing. That is what makes a write safe
    to repeat when a durable engine retries or replays it.
    """

    async def register_run(self, registration: RunRegistration) -> RunRecord:
        """Register a run, or return the record a previous call with the same token made.

        Raises:
            RunIdConflictError: The run id is registered with a different token.
        """
        ...

    async def list_runs(
        self, *, conversation_id: str | None = None, parent_run_id: str | None = None
    ) -> list[RunRecord]:
        """Registered runs, filtered in the store, oldest first (ties by run id).

        Args:
            conversation_id: Only runs of this conversation.
            parent_run_id: Only runs started by this run.
        """
        ...

    async def list_conversations(self) -> list[str]:
        """The distinct conversation ids of all registered runs, sorted."""
        ...

    async def save_snapshot(self, delta: SnapshotDelta) -> bool:
        """Store a snapshot delta; `False` when its `(run_id, index)` is already stored.

        Raises:
            SnapshotChainError: The run is not registered, or the delta does not follow the
                run's previous snapshot.
        """
        ...

    async def save_snapshots(self, deltas: Sequence[SnapshotDelta]) -> list[bool]:
        """Store several deltas (of one run or several, in order) in one transaction.

        Each delta is checked and stored as `save_snapshot` would, in order, so a delta may follow
        or build on one earlier in the batch; the result says, per delta, whether it was new. If any
        delta is refused, nothing of the batch is stored.

        Raises:
            SnapshotChainError: A delta's run is not registered, or the delta does not follow the
                run's previous snapshot.
        """
        ...

    async def latest_snapshot(self, run_id: str, *, include_interrupted: bool = False) -> Snapshot | None:
        """The newest snapshot of a run, or `None`."""
        ...

    async def delete_conversation(self, conversation_id: str) -> int:
        """Delete every run of a conversation with its snapshots, messages and index; returns the run count."""
        ...

    async def aclose(self) -> None:
        """Release connections the store opened itself (a caller-owned pool stays open)."""
        ...


@runtime_checkable
class LogBodies(Protocol):
    """A store that can hand back log entries as their stored JSON text, not decoded into messages.

    A search answer shows a few dozen messages and needs only their display text; turning each
    into pydantic-ai objects cost more than half of showing it (`durable_recall.text.prepare_stored`
    renders the JSON directly). Every built-in store has it; a store without it is read through
    `read_logs` as before.
    """

    async def read_log_bodies(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, str]]:
        """`read_logs`, with each message as its JSON text (checksum verified), not validated as a message.

        Raises:
            CorruptSnapshotError: A body is missing or does not decode (its snapshot index is -1).
        """
        ...


@runtime_checkable
class BatchSaver(Protocol):
    """A store that registers a run and saves its first deltas in one transaction.

    `StepPersistence` sends a run's registration with its first batch of deltas; a store
    offering this (the SQLite and Postgres stores) commits them together, one commit (and, on
    SQLite, one sync of the file) per durable write instead of two. Any other `StepStore` gets
    `register_run` then `save_snapshots`, with the same outcome.
    """

    async def save_batch(self, batch: PersistBatch) -> list[bool]:
        """Register `batch.registration` (if set), then store `batch.deltas`, all or nothing.

        Returns:
            Per delta, whether it was new (as `save_snapshots`).

        Raises:
            RunIdConflictError: The run id is registered with a different token; nothing is stored.
            SnapshotChainError: As for `save_snapshots`; the registration is not stored either.
        """
        ...


@dataclass(frozen=True, kw_only=True)
class ConversationSummary:
    """A conversation's runs in a store, counted: what `durable-recall conversations` lists.

    Attributes:
        conversation_id: The conversation.
        runs: How many runs it has.
        first_started_at: When its first run was registered (UTC).
        last_started_at: When its last run was registered (UTC).
    """

    conversation_id: str
    runs: int
    first_started_at: datetime
    last_started_at: datetime


@runtime_checkable
class ConversationSummaries(Protocol):
    """A store that counts its conversations' runs itself (the SQL stores: one grouped query).

    Listing every run to count them builds a record per run; a store of a million messages holds
    tens of thousands of runs, which took the command line seconds.
    """

    async def conversation_summaries(self) -> tuple[list[ConversationSummary], int]:
        """Each conversation with runs (in no particular order), and the number of runs without one.

        Raises:
            CorruptRunError: A run's conversation id or start time is stored as another type.
        """
        ...
