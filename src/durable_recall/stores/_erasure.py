"""Erasure and retention over a step store: delete a conversation or a run, prune idle conversations, scrub.

`erase_conversation`, `erase_run` and `prune_idle` are what `durable-recall delete` and
`durable-recall prune` run; a program can call them too. Each deletes through the store (one write
transaction per conversation or run, the index and vectors included) and then, unless told not
to, *scrubs* it: the rows are gone from the start, but their bytes can stay in the database's files
(SQLite's freed pages and write-ahead log, Postgres's dead tuples) until the store rewrites them.
The stores that can (`SqliteStepStore`, `PostgresStepStore`) implement `ErasableStore`; see
docs/erasure.md for what each guarantees and what remains (Postgres WAL segments, backups).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from ._protocol import StepStore

__all__ = (
    'ErasableStore',
    'Erased',
    'IdleConversation',
    'Pruned',
    'ScrubReport',
    'erase_conversation',
    'erase_run',
    'prune_idle',
)


@dataclass(frozen=True, kw_only=True)
class ScrubReport:
    """What scrubbing a store's files did.

    Attributes:
        complete: Whether no deleted byte remains in the files the store controls.
        detail: What was done, or what kept it from completing (and what to do).
    """

    complete: bool
    detail: str


@dataclass(frozen=True, kw_only=True)
class IdleConversation:
    """A conversation with no run started or snapshot saved since `last_activity` (UTC)."""

    conversation_id: str
    last_activity: datetime


@runtime_checkable
class ErasableStore(Protocol):
    """A step store that deletes single runs, deletes idle conversations atomically, and scrubs its files."""

    async def delete_conversation(self, conversation_id: str) -> int:
        """Delete every run of a conversation with everything it holds; the run count."""
        ...

    async def delete_run(self, run_id: str) -> bool:
        """Delete one run with everything it holds (others referring to its messages keep copies); whether stored."""
        ...

    async def idle_conversations(self, before: datetime) -> list[IdleConversation]:
        """Conversations whose last run start and snapshot save are all before `before`, oldest first."""
        ...

    async def delete_idle_conversation(self, conversation_id: str, before: datetime) -> int | None:
        """Delete the conversation if it is still idle since `before` (checked in the delete's transaction).

        Returns:
            The number of runs deleted, or `None` when the conversation has been active since.
        """
        ...

    async def scrub(self) -> ScrubReport:
        """Rewrite what holds deleted bytes (see docs/erasure.md), so that none is recoverable from the files."""
        ...


@dataclass(frozen=True, kw_only=True)
class Erased:
    """What `erase_conversation` or `erase_run` removed.

    Attributes:
        runs: The ids of the runs deleted.
        scrub: What scrubbing did (`None` when not asked for).
    """

    runs: tuple[str, ...]
    scrub: ScrubReport | None


@dataclass(frozen=True, kw_only=True)
class Pruned:
    """What `prune_idle` removed (or, on a dry run, would remove).

    Attributes:
        conversations: The idle conversations found, oldest first.
        deleted: Those deleted, with the number of runs each had (empty on a dry run).
        kept: Those found idle that became active before their delete (a writer saved meanwhile).
        scrub: What scrubbing did (`None` on a dry run, when nothing was deleted, or not asked for).
    """

    conversations: tuple[IdleConversation, ...]
    deleted: dict[str, int] = field(default_factory=dict[str, int])
    kept: tuple[str, ...] = ()
    scrub: ScrubReport | None = None


def _erasable(store: object) -> ErasableStore:
    if not isinstance(store, ErasableStore):
        from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(
            f'{store!r} cannot erase: use SqliteStepStore or PostgresStepStore (they delete single runs, '
            'prune atomically and scrub their files)'
        )
    return store


async def erase_conversation(store: StepStore, conversation_id: str, *, scrub: bool = True) -> Erased:
    """Delete a conversation's runs, snapshots, messages, index and vectors; then scrub the store's files.

    Raises:
        StoreConfigurationError: The store does not implement `ErasableStore`.
    """
    erasable = _erasable(store)
    runs = [run.run_id for run in await store.list_runs(conversation_id=conversation_id)]
    await erasable.delete_conversation(conversation_id)
    return Erased(runs=tuple(runs), scrub=await erasable.scrub() if scrub else None)


async def erase_run(store: StepStore, run_id: str, *, scrub: bool = True) -> Erased:
    """Delete one run; runs inheriting its messages keep copies, and its conversation is re-indexed without it.

    Raises:
        StoreConfigurationError: The store does not implement `ErasableStore`.
        CorruptSnapshotError: A run referring to its messages has already lost one (nothing deleted).
    """
    erasable = _erasable(store)
    deleted = await erasable.delete_run(run_id)
    return Erased(runs=(run_id,) if deleted else (), scrub=await erasable.scrub() if scrub and deleted else None)


async def prune_idle(
    store: StepStore, *, idle_for: timedelta, now: datetime | None = None, dry_run: bool = False, scrub: bool = True
) -> Pruned:
    """Delete every conversation with no activity (run started, snapshot saved) for `idle_for`.

    Safe while writers run: each conversation is checked again and deleted in one write
    transaction, so one that a writer touched after the listing is kept. Idempotent: a second
    call finds nothing older. Runs without a conversation id are never pruned.

    Raises:
        StoreConfigurationError: The store does not implement `ErasableStore`, or `idle_for` is not positive.
    """
    if idle_for <= timedelta(0):
        from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(f'idle_for must be positive, got {idle_for!r}')
    erasable = _erasable(store)
    before = (now or datetime.now(UTC)) - idle_for
    idle = tuple(await erasable.idle_conversations(before))
    if dry_run:
        return Pruned(conversations=idle)
    deleted: dict[str, int] = {}
    kept: list[str] = []
    for conversation in idle:
        runs = await erasable.delete_idle_conversation(conversation.conversation_id, before)
        if runs is None:
            kept.append(conversation.conversation_id)
        else:
            deleted[conversation.conversation_id] = runs
    report = await erasable.scrub() if scrub and deleted else None
    return Pruned(conversations=idle, deleted=deleted, kept=tuple(kept), scrub=report)
