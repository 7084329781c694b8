"""What the persistent search index reads and writes of a SQL conversation store, besides its index tables.

`ConversationStoreSource` over `SqliteConversationStore` or `PostgresConversationStore` is searched
through a persistent index kept in the store's own database (the step store's index layout, in
`drc_` tables; schema version 2). The search layer catches it up from the entry log: entries are
immutable and each names its parent, so a save that appended to a conversation costs a walk from the
new head back to the one indexed (one query, ids only) and the bodies of the new entries.

The index sees runs (see `ConversationStoreSource`): a conversation's live history, and each branch
holding messages of its own. `drc_runs` says, per run, where its entries are (`LogRun`), and
`drc_index_conversations` what the runs were derived from (`IndexedConversation`): an unchanged
conversation is one comparison of revisions. Both change only under the index's write lock, with
the pending marks that tell catch-up which runs to read again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from ..base import format_timestamp, parse_timestamp
from ._api import ConversationEntry

__all__ = ('EntryLog', 'IndexedConversation', 'LogRun', 'log_run_row', 'read_log_run')


@dataclass(frozen=True, kw_only=True)
class IndexedConversation:
    """What a conversation's runs in the index were derived from.

    Attributes:
        revision: The conversation's revision then.
        head: Its head entry then.
        depth: Entries from the first to `head`.
        tips: Its branch tips then (in the record's order).
        timed: Whether the live history had a message with a time (its run's start is then fixed).
    """

    revision: str
    head: str | None
    depth: int
    tips: tuple[str, ...]
    timed: bool


@dataclass(frozen=True, kw_only=True)
class LogRun:
    """One run the index derives from a conversation: which entries it holds.

    Attributes:
        run_id: The conversation id (live history) or `'<conversation id>#branch:<tip>'`.
        conversation_id: The conversation.
        scope: The conversation's `ConversationStore` scope.
        started_at: The run's start (its first message's time).
        metadata: The run record's metadata (`{'history': 'live'}` or `'branch'` with its `'tip'`).
        head: The entry the run's line ends at (`None`: an empty conversation).
        skip: Leading entries of that line the run leaves to other runs (a branch's shared prefix).
        upto: What the index will have read of the run once caught up (its `seen` watermark).
        token: New each time the conversation's runs are registered: positions of an older
            registration may have held other messages, and what a process cached of them must not match.
    """

    run_id: str
    conversation_id: str
    scope: str | None
    started_at: datetime
    metadata: Mapping[str, str]
    head: str | None
    skip: int
    upto: int
    token: str


def log_run_row(run: LogRun) -> tuple[Any, ...]:
    """A `drc_runs` row, in the column order of `RUN_COLUMNS` (`upto` is the pending mark's)."""
    metadata = json.dumps(dict(run.metadata), sort_keys=True)
    started_at = format_timestamp(run.started_at)
    return (run.run_id, run.conversation_id, run.scope, started_at, metadata, run.head, run.skip, run.token)


def read_log_run(row: Sequence[Any]) -> LogRun:
    """A run from a `drc_runs` row (its `upto` is not stored there: 0)."""
    run_id, conversation_id, scope, started_at, metadata, head, skip, token = row
    return LogRun(
        run_id=run_id,
        conversation_id=conversation_id,
        scope=scope,
        started_at=parse_timestamp(started_at),
        metadata=json.loads(metadata),
        head=head,
        skip=skip,
        upto=0,
        token=token,
    )


class EntryLog(Protocol):
    """A SQL conversation store's entry log and index bookkeeping (`store.entry_log()`)."""

    async def indexed(self, conversation_ids: Sequence[str] | None) -> dict[str, IndexedConversation]:
        """What the index derived these conversations' runs from (`None`: every conversation it holds)."""
        ...

    async def line(self, head_id: str) -> list[str]:
        """The entry ids from the first up to `head_id`, in one query (no bodies).

        Raises:
            KeyError: An entry of the line is missing (a concurrent delete released it).
        """
        ...

    async def walk(self, head_id: str, stop_id: str) -> list[str] | None:
        """The entry ids after `stop_id` up to `head_id`, in one query; `None` if `stop_id` is not an ancestor."""
        ...

    async def entries(self, entry_ids: Sequence[str]) -> dict[str, ConversationEntry]:
        """Entries by id, in one read (ids not stored are left out)."""
        ...

    async def runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        """The index's runs by id (runs it does not hold are left out)."""
        ...

    async def advance(self, conversation_id: str, expected: str, now: IndexedConversation) -> bool:
        """Record that the live history grew to `now.head`, and mark its run pending, if the index is at `expected`.

        Returns:
            `False` if another process moved the conversation's index first (read it again).
        """
        ...

    async def reset(
        self, conversation_id: str, expected: str | None, now: IndexedConversation | None, runs: Sequence[LogRun]
    ) -> bool:
        """Forget the conversation's index and, unless `now` is `None`, register `runs` anew, all pending.

        Args:
            conversation_id: The conversation.
            expected: The revision the index holds it at (`None`: not held).
            now: What the runs are derived from (`None`: the conversation is gone; forget it).
            runs: Its runs.

        Returns:
            `False` if another process moved the conversation's index first (read it again).
        """
        ...
