"""A look at how each backend physically holds a run's message log (schema v3)."""

from __future__ import annotations

from typing import Literal

from durable_recall.stores import InMemoryStepStore
from durable_recall.stores.memory._store import _Ref
from tests._services.stores import StoreKit

EntryKind = Literal['text', 'compressed', 'ref']
Entry = tuple[EntryKind, str | None, int | None]
"""`(kind, ref_run_id, ref_seq)` of one log entry; the reference columns only for a reference."""


async def log_entries(kit: StoreKit, run_id: str) -> list[Entry]:
    """The run's log entries in number order, by how each is stored."""
    if isinstance(kit.store, InMemoryStepStore):
        return [
            ('ref', entry.run_id, entry.seq) if isinstance(entry, _Ref) else ('text', None, None)
            for entry in kit.store._runs[run_id].log
        ]
    if kit.backend == 'sqlite':
        rows = await kit.query(
            'SELECT typeof(body), ref_run_id, ref_seq FROM {messages} WHERE run_id = ? ORDER BY seq', run_id
        )
        kinds: dict[str, EntryKind] = {'text': 'text', 'blob': 'compressed', 'null': 'ref'}
        return [(kinds[kind], ref_run_id, ref_seq) for kind, ref_run_id, ref_seq in rows]
    rows = await kit.query(
        'SELECT body IS NOT NULL, data IS NOT NULL, ref_run_id, ref_seq FROM {messages} WHERE run_id = ? ORDER BY seq',
        run_id,
    )
    return [
        ('text' if text else 'compressed' if data else 'ref', ref_run_id, ref_seq)
        for text, data, ref_run_id, ref_seq in rows
    ]


async def pending_marks(kit: StoreKit) -> dict[str, int]:
    """The index's pending marks: run id to the last snapshot index it has not read."""
    if isinstance(kit.store, InMemoryStepStore):
        return {run_id: upto for run_id, (_, upto) in kit.store.index_storage().pending.items()}
    return dict(await kit.query('SELECT run_id, upto FROM {pending}'))


async def clear_pending_marks(kit: StoreKit) -> None:
    """Forget every pending mark, as if the index had caught up."""
    if isinstance(kit.store, InMemoryStepStore):
        kit.store.index_storage().pending.clear()
    else:
        await kit.query('DELETE FROM {pending}')
