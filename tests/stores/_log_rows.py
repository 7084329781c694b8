"""A look at how each backend physically holds a run's message log (schema v5)."""

from __future__ import annotations

from typing import Literal

from durable_recall.stores import InMemoryStepStore
from durable_recall.stores.memory._store import _Ref
from tests._services.stores import StoreKit

from ._helpers import SQLITE_LOG_BY_RUN_ID, SQLITE_TIMES_AS_TEXT

EntryKind = Literal['text', 'compressed', 'ref']
Entry = tuple[EntryKind, str | None, int | None]
"""`(kind, run_id, seq)` of one log entry; for a reference, the run and number of the entry holding its body."""

RefRow = tuple[int, int, str, int]
"""A reference range as stored: `(seq, count, ref_run_id, ref_seq)`."""


async def ref_ranges(kit: StoreKit, run_id: str) -> list[RefRow]:
    """The run's reference ranges as the SQL stores hold them, in log order."""
    rows = await kit.query(
        'SELECT seq, count, {ref_run}, ref_seq FROM {message_refs} WHERE {of_run} ORDER BY seq', run_id
    )
    return [(seq, count, ref_run_id, ref_seq) for seq, count, ref_run_id, ref_seq in rows]


async def _own_rows(kit: StoreKit, run_id: str) -> dict[int, EntryKind]:
    if kit.backend == 'sqlite':
        rows = await kit.query('SELECT seq, typeof(body) FROM {messages} WHERE {of_run}', run_id)
        kinds: dict[str, EntryKind] = {'text': 'text', 'blob': 'compressed'}
        return {seq: kinds[kind] for seq, kind in rows}
    rows = await kit.query('SELECT seq, body IS NOT NULL FROM {messages} WHERE {of_run}', run_id)
    return {seq: 'text' if text else 'compressed' for seq, text in rows}


class LogReader:
    """A SQL store's log rows, each run's read once: for many look-ups while the rows stay as they are.

    Following references entry by entry re-reads the same runs' rows many times over (a query, and
    on Postgres a connection, each): a test that looks up every entry of many runs reads through one
    of these instead, after its last write.
    """

    def __init__(self, kit: StoreKit) -> None:
        self.kit = kit
        self._own: dict[str, dict[int, EntryKind]] = {}
        self._refs: dict[str, list[RefRow]] = {}

    async def own_rows(self, run_id: str) -> dict[int, EntryKind]:
        """The run's entries holding a body of their own, by number: their kind."""
        if run_id not in self._own:
            self._own[run_id] = await _own_rows(self.kit, run_id)
        return self._own[run_id]

    async def ref_ranges(self, run_id: str) -> list[RefRow]:
        """The run's reference ranges (see `ref_ranges`)."""
        if run_id not in self._refs:
            self._refs[run_id] = await ref_ranges(self.kit, run_id)
        return self._refs[run_id]

    async def owner(self, run_id: str, seq: int) -> tuple[str, int, int] | None:
        """`(run_id, seq, hops)`: the row holding the body of the entry, and the references followed to it."""
        for hops in range(100):
            if seq in await self.own_rows(run_id):
                return run_id, seq, hops
            for first, count, ref_run_id, ref_seq in await self.ref_ranges(run_id):
                if first <= seq < first + count:
                    run_id, seq = ref_run_id, ref_seq + seq - first
                    break
            else:
                return None
        raise AssertionError('references run in a circle')


async def owner(kit: StoreKit, run_id: str, seq: int) -> tuple[str, int, int] | None:
    """`(run_id, seq, hops)`: the row holding the body of a SQL store's entry, and the references followed to it."""
    return await LogReader(kit).owner(run_id, seq)


async def log_entries(kit: StoreKit, run_id: str) -> list[Entry]:
    """The run's log entries in number order, by how each is stored (a reference by where its body is)."""
    if isinstance(kit.store, InMemoryStepStore):
        return [
            ('ref', entry.run_id, entry.seq) if isinstance(entry, _Ref) else ('text', None, None)
            for entry in kit.store._runs[run_id].log
        ]
    reader = LogReader(kit)
    own = await reader.own_rows(run_id)
    referred = {seq for first, count, _, _ in await reader.ref_ranges(run_id) for seq in range(first, first + count)}
    entries: list[Entry] = []
    for seq in sorted(own.keys() | referred):
        if seq in own:
            entries.append((own[seq], None, None))
        else:
            found = await reader.owner(run_id, seq)
            entries.append(('ref', *found[:2]) if found else ('ref', None, None))
    return entries


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


async def back_to_version_4(kit: StoreKit) -> None:
    """Give a SQL store's tables the version-4 layout (a store without reference ranges), as an older release left them.

    Reference rows per message, and JSON text states, are not recreated: a test wanting them
    writes them itself.
    """
    assert await kit.query('SELECT COUNT(*) FROM {message_refs}') == [(0,)], 'ranges have no version-4 form here'
    if kit.backend == 'sqlite':
        for statement in SQLITE_LOG_BY_RUN_ID:
            await kit.query(statement)
    await kit.query('DROP TABLE {message_refs}')
    if kit.backend == 'sqlite':
        for statement in SQLITE_TIMES_AS_TEXT:
            await kit.query(statement)
        await kit.query('ALTER TABLE {messages} ADD COLUMN ref_run_id TEXT')
        await kit.query('ALTER TABLE {messages} ADD COLUMN ref_seq INTEGER')
    else:
        await kit.query('ALTER TABLE {messages} ADD COLUMN ref_run_id TEXT COLLATE "C", ADD COLUMN ref_seq INTEGER')
        await kit.query("ALTER TABLE {index_runs} ALTER COLUMN state TYPE TEXT USING encode(state, 'hex')")
        await kit.query('DROP TABLE {index_groups}')  # version 12's: the index is rebuilt on the way up
        await kit.query('ALTER TABLE {index_scopes} DROP COLUMN group_bits')
    await kit.query("UPDATE {meta} SET value = '4' WHERE key = 'schema_version'")
