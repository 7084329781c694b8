"""The durable record types that cross from the agent into a store and back.

They are plain frozen dataclasses of primitive fields, so pydantic builds their schemas in
microseconds when they are durable-operation arguments, and Temporal and DBOS journal them as
small JSON values.

No `from __future__ import annotations` here: pydantic resolves these dataclasses' field types
through `sys.modules`, which Temporal's workflow sandbox replaces, so the annotations must be
real objects rather than strings.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = (
    'MAX_RUN_ID_LENGTH',
    'PersistBatch',
    'RunRecord',
    'RunRegistration',
    'Segment',
    'Snapshot',
    'SnapshotDelta',
    'SnapshotState',
)

MAX_RUN_ID_LENGTH = 200
"""The longest run id a store keeps; a search answers a longer one as an unknown run."""

SnapshotState: TypeAlias = Literal['complete', 'interrupted']
"""`complete`: every tool call in the history has its return; `interrupted`: some call is open."""

Segment: TypeAlias = tuple[int, int]
"""One piece of a snapshot delta.

`(start, end)` with `start >= 0` copies positions `start` up to `end` (exclusive) of the previous
snapshot; `(-1, count)` takes the next `count` messages from the delta's new messages.
"""


@dataclass(frozen=True, kw_only=True)
class RunRegistration:
    """What `StepPersistence` asks a store to register before a run's first step.

    Attributes:
        run_id: The store run id.
        conversation_id: The conversation the run belongs to.
        parent_run_id: The store run id of the run that started this one, if any.
        agent_name: The agent's name, for listing.
        metadata: Free-form string labels.
        token: Identifies the agent run that claims `run_id`; a retry or replay of the same run
            carries the same token, a different run a different one.
    """

    run_id: str
    conversation_id: str | None
    parent_run_id: str | None = None
    agent_name: str | None = None
    metadata: dict[str, str] = field(default_factory=dict[str, str])
    token: str

    def record(self, started_at: datetime) -> 'RunRecord':
        """The record a store keeps for this registration, stamped with the store's clock."""
        return RunRecord(
            run_id=self.run_id,
            conversation_id=self.conversation_id,
            parent_run_id=self.parent_run_id,
            agent_name=self.agent_name,
            metadata=dict(self.metadata),
            started_at=started_at,
            token=self.token,
        )


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A registered run, as a store lists it.

    Attributes:
        run_id: The store run id.
        conversation_id: The conversation the run belongs to.
        parent_run_id: The store run id of the run that started this one, if any.
        agent_name: The agent's name.
        metadata: Free-form string labels.
        started_at: When the store registered the run (UTC).
        token: The agent run that claimed the id.
    """

    run_id: str
    conversation_id: str | None
    parent_run_id: str | None = None
    agent_name: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict[str, str])
    started_at: datetime
    token: str


@dataclass(frozen=True, kw_only=True)
class SnapshotDelta:
    """One snapshot, expressed as a change to the run's previous snapshot.

    Passing a delta rather than the whole history keeps a durable engine's journal linear in the
    conversation, and lets a store keep each message once per run.

    Attributes:
        run_id: The store run id.
        index: The snapshot's position in the run (0, 1, 2, ...). `(run_id, index)` is the
            idempotency key: a store ignores a delta whose index it already holds.
        step_index: The agent's run step when the snapshot was taken.
        state: Whether every tool call in the snapshot is answered.
        segments: How to assemble the snapshot (see [`Segment`][durable_recall.stores.Segment]).
        messages: The new messages, each serialized as one JSON object.
        base_run_id: For a run's first snapshot only: copy segments refer to this other run's
            snapshot `base_index` instead of a previous snapshot of this run. A conversation's
            next run inherits the previous run's history, so this keeps the inherited messages
            out of the durable journal. The store records them in this run's log as references to
            the base run's entries when both runs share a conversation id (a conversation is
            deleted whole, so the references can never dangle), and copies them otherwise.
        base_index: The snapshot of `base_run_id` that copy segments refer to.
    """

    run_id: str
    index: int
    step_index: int
    state: SnapshotState
    segments: list[Segment]
    messages: list[str]
    base_run_id: str | None = None
    base_index: int | None = None

    @property
    def size(self) -> int:
        """The number of messages in the assembled snapshot."""
        return sum((end - start) if start >= 0 else end for start, end in self.segments)


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """A run's whole message history at one step boundary, as read back from a store.

    Attributes:
        run_id: The store run id.
        index: The snapshot's position in the run.
        step_index: The agent's run step when it was taken.
        state: Whether every tool call in it is answered.
        saved_at: When the store wrote it (UTC).
        messages: The history, message for message as it was saved.
        seqs: Where each message lives in the run's message log (its log number), aligned with
            `messages`; the same number means the same stored body. Empty from a store that
            does not say.
        bodies: Each message's stored body (the store's encoding: compare, don't parse), aligned
            with `messages`: equal bodies decode to equal messages, across runs too (an inherited
            message is its first run's body), so a reader deriving something from each message
            (the index's content hashes) can reuse it. Empty from a store that does not say.
    """

    run_id: str
    index: int
    step_index: int
    state: SnapshotState
    saved_at: datetime
    # A string, so that reading a store's rows loads no pydantic-ai: a read-back record, never a
    # durable-operation argument, so pydantic never resolves it.
    messages: 'list[ModelMessage]'
    seqs: list[int] = field(default_factory=list[int])
    bodies: list[str | bytes] = field(default_factory=list[str | bytes], repr=False, compare=False)


@dataclass(frozen=True, kw_only=True)
class PersistBatch:
    """One durable write: an optional run registration and the snapshot deltas queued since the last.

    Attributes:
        registration: The run to register first, on the run's first write only.
        deltas: Snapshot deltas in index order.
    """

    registration: RunRegistration | None = None
    deltas: list[SnapshotDelta] = field(default_factory=list[SnapshotDelta])
