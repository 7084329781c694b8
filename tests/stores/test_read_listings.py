"""A batch of runs' listings read ahead in one read (`read_listings`), for the index's catch-up.

A chat's catch-up folds thousands of short runs, and reading each run's listing on its own paid a
worker-thread hop (SQLite) or a transaction's round trips (Postgres) per run. `read_listings`
reads a batch's rows in one transaction; each listing decodes later to exactly what the run's own
listing gives, and a damaged run keeps its own error without stopping the others.
"""

from __future__ import annotations

from typing import Any

import pytest

from durable_recall import update_index
from durable_recall.errors import CorruptSnapshotError
from durable_recall.index import Indexer
from durable_recall.index._reader import SharingReader
from tests._services.stores import StoreKit

from ._helpers import messages, registration, save_history
from .test_inherited_log import based

pytestmark = pytest.mark.anyio


async def _three_runs(kit: StoreKit) -> None:
    store = kit.store
    for run_id in ('parent', 'child', 'other'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'parent', [messages(0, 1), messages(0, 1, 2, 3)])
    assert await store.save_snapshot(based('child', 'parent', 1, [(1, 3), (-1, 1)], [9]))
    await save_history(store, 'other', [messages(5), messages(5, 6), messages(5, 6, 7)])


async def test_listings_read_ahead_decode_as_each_runs_own_listing(sql_kit: StoreKit) -> None:
    await _three_runs(sql_kit)
    store = sql_kit.store
    assert isinstance(store, SharingReader)

    after = {'parent': -1, 'child': -1, 'other': 0, 'never-registered': -1}
    listings = await store.read_listings(after)

    assert set(listings) == set(after)
    shared: dict[object, Any] = {}
    for run_id, seen in after.items():
        expected = await store.list_snapshots(run_id, include_interrupted=True, after=seen)
        assert listings[run_id].snapshots(shared) == expected
    # Decoded through the one cache, in the order catch-up folds them: the child's inherited
    # messages are the very objects decoded for the parent.
    parent = listings['parent'].snapshots({})
    assert len(parent) == 2
    assert await store.read_listings({}) == {}
    assert (await store.read_listings({'other': 2}))['other'].snapshots({}) == []


async def test_a_damaged_run_keeps_its_error_and_the_others_read(sql_kit: StoreKit) -> None:
    await _three_runs(sql_kit)
    store = sql_kit.store
    assert isinstance(store, SharingReader)
    await sql_kit.query('DELETE FROM {snapshots} WHERE run_id = ? AND idx = 1', 'other')

    listings = await store.read_listings({'parent': -1, 'other': -1, 'child': -1})

    with pytest.raises(CorruptSnapshotError) as raised:
        listings['other'].snapshots({})
    with pytest.raises(CorruptSnapshotError) as alone:
        await store.list_snapshots('other', include_interrupted=True)
    assert str(raised.value) == str(alone.value)
    assert listings['parent'].snapshots({}) == await store.list_snapshots('parent', include_interrupted=True)
    assert listings['child'].snapshots({}) == await store.list_snapshots('child', include_interrupted=True)


async def test_catch_up_reads_a_batch_of_runs_in_one_read(sql_kit: StoreKit, monkeypatch: pytest.MonkeyPatch) -> None:
    # The point of the batch read: no listing is read run by run (one worker hop or transaction
    # each) while a batch is caught up. The index it builds is what run-by-run reads build.
    store = sql_kit.store
    for number in range(12):
        run_id = f'r{number}'
        await store.register_run(registration(run_id, conversation_id='c'))
        await save_history(store, run_id, [messages(100 + 2 * number, 101 + 2 * number)])
    calls: list[str] = []
    batched: list[int] = []
    kind: Any = type(store)
    one_by_one = kind.list_snapshots_sharing
    read_listings = kind.read_listings

    async def counted_one(self: Any, run_id: str, **kwargs: Any) -> Any:
        calls.append(run_id)
        return await one_by_one(self, run_id, **kwargs)

    async def counted_batch(self: Any, after: Any) -> Any:
        batched.append(len(after))
        return await read_listings(self, after)

    monkeypatch.setattr(kind, 'list_snapshots_sharing', counted_one)
    monkeypatch.setattr(kind, 'read_listings', counted_batch)

    assert await update_index(store) == []

    assert calls == []
    assert batched == [12]
    storage = Indexer.of_store(store).storage
    rows = await storage.load_runs([f'r{number}' for number in range(12)])
    assert sorted(rows) == sorted(f'r{number}' for number in range(12))
    assert all(row.seen == 0 for row in rows.values())


async def test_catch_up_of_a_batch_reports_the_damaged_run_and_indexes_the_rest(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    for run_id in ('a', 'b', 'c'):
        await store.register_run(registration(run_id, conversation_id='conv'))
        await save_history(store, run_id, [messages(1), messages(1, 2)])
    await sql_kit.query('DELETE FROM {snapshots} WHERE run_id = ? AND idx = 0', 'b')

    problems = await update_index(store)

    assert [(type(problem), problem.run_id) for problem in problems] == [(CorruptSnapshotError, 'b')]
    rows = await Indexer.of_store(store).storage.load_runs(['a', 'b', 'c'])
    assert sorted(rows) == ['a', 'c']
