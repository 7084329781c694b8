"""Retention over a conversation store: delete every conversation whose record was last saved too long ago.

The conversation-store half of `durable-recall prune` (the step stores' is
`durable_recall.stores.prune_idle`). A conversation store keeps each conversation as one record,
saved whole, so its last activity is the record's `updated_at`. Each delete names the revision the
listing read: a save since then changes it, the delete is a `ConversationConflict`, and the record
is kept. So pruning is safe while writers run, and running it again deletes nothing more.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..stores import IdleConversation, Pruned, ScrubReport
from ._api import ConversationConflict, ConversationStore

__all__ = ('prune_idle_records',)


async def prune_idle_records(
    store: ConversationStore,
    *,
    idle_for: timedelta,
    now: datetime | None = None,
    dry_run: bool = False,
    scrub: bool = True,
) -> Pruned:
    """Delete every conversation whose record was last saved more than `idle_for` ago.

    Args:
        store: Any `ConversationStore`; ours also scrub their files afterwards (see docs/erasure.md).
        idle_for: How long a record must have gone unsaved.
        now: The time to measure from (default: now).
        dry_run: Only list what would be deleted.
        scrub: Scrub the store's files after deleting (a store without `scrub` is not scrubbed).

    Raises:
        StoreConfigurationError: `idle_for` is not positive.
    """
    if idle_for <= timedelta(0):
        from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(f'idle_for must be positive, got {idle_for!r}')
    cutoff = (now or datetime.now(UTC)) - idle_for
    records = sorted(
        (record for record in await store.read_records() if record.updated_at < cutoff),
        key=lambda record: (record.updated_at, record.conversation_id),
    )
    idle = tuple(IdleConversation(conversation_id=r.conversation_id, last_activity=r.updated_at) for r in records)
    if dry_run:
        return Pruned(conversations=idle)
    deleted: dict[str, int] = {}
    kept: list[str] = []
    for record in records:
        try:
            await store.delete_record(record.conversation_id, expected_revision=record.revision)
        except ConversationConflict:
            kept.append(record.conversation_id)
        else:
            deleted[record.conversation_id] = 1
    scrubber = getattr(store, 'scrub', None)
    report: ScrubReport | None = await scrubber() if scrub and deleted and scrubber is not None else None
    return Pruned(conversations=idle, deleted=deleted, kept=tuple(kept), scrub=report)
