"""`SnapshotHistorySource`: store checks, the conversation filter in the store, the record cache, equality."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from pydantic_ai.messages import ModelMessage

from durable_recall import InMemoryStepStore, SqliteStepStore
from durable_recall.errors import CorruptSnapshotError
from durable_recall.history import HistorySource
from durable_recall.search import SnapshotHistorySource
from durable_recall.stores import RunRecord, Snapshot
from tests.stores._helpers import delta, registration

from ._messages import hashes, reply, user

pytestmark = pytest.mark.anyio


class CountingStore(InMemoryStepStore):
    """Records what the source asks the store for."""

    def __init__(self) -> None:
        super().__init__()
        self.listed_runs: list[str | None] = []
        self.snapshot_reads: list[tuple[str, int, int]] = []  # (run, after, how many came back)
        self.fail_reads = False

    async def list_runs(
        self, *, conversation_id: str | None = None, parent_run_id: str | None = None
    ) -> list[RunRecord]:
        self.listed_runs.append(conversation_id)
        return await super().list_runs(conversation_id=conversation_id, parent_run_id=parent_run_id)

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        if self.fail_reads:
            raise CorruptSnapshotError(run_id, after + 1, 'not JSON')
        assert not include_interrupted
        snapshots = await super().list_snapshots(run_id, after=after)
        self.snapshot_reads.append((run_id, after, len(snapshots)))
        return snapshots


class Writer:
    """Saves a run's snapshots one by one, each as a delta against the previous."""

    def __init__(self, store: InMemoryStepStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.previous: Sequence[ModelMessage] = []
        self.index = 0

    async def save(self, snapshot: Sequence[ModelMessage]) -> None:
        assert await self.store.save_snapshot(delta(self.run_id, self.index, self.previous, snapshot))
        self.previous, self.index = snapshot, self.index + 1


async def new_run(store: InMemoryStepStore, run_id: str, conversation_id: str | None = 'conv') -> Writer:
    await store.register_run(registration(run_id, conversation_id=conversation_id))
    return Writer(store, run_id)


def test_a_store_is_required() -> None:
    with pytest.raises(TypeError, match='needs a StepStore, got dict: use InMemoryStepStore, SqliteStepStore'):
        SnapshotHistorySource({})  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize('bad', [-1, 1.5, True, '4'])
def test_max_cached_runs_is_checked(bad: object) -> None:
    error = ValueError if bad == -1 else TypeError
    with pytest.raises(error, match='max_cached_runs'):
        SnapshotHistorySource(InMemoryStepStore(), max_cached_runs=bad)  # pyright: ignore[reportArgumentType]


def test_it_is_a_history_source() -> None:
    assert isinstance(SnapshotHistorySource(InMemoryStepStore()), HistorySource)


def test_sources_over_one_store_are_equal() -> None:
    store = InMemoryStepStore()
    first, second = SnapshotHistorySource(store), SnapshotHistorySource(store, max_cached_runs=3)
    assert first == second and hash(first) == hash(second)
    assert len({first, second}) == 1
    assert first != SnapshotHistorySource(InMemoryStepStore())
    assert first != store
    assert first.store is store
    assert 'InMemoryStepStore' in repr(first)


async def test_the_conversation_filter_runs_in_the_store() -> None:
    store = CountingStore()
    await new_run(store, 'a1', 'conv-a')
    await new_run(store, 'b1', 'conv-b')
    await new_run(store, 'a2', 'conv-a')
    source = SnapshotHistorySource(store)

    assert [run.run_id for run in await source.list_runs(conversation_id='conv-a')] == ['a1', 'a2']
    assert [run.run_id for run in await source.list_runs()] == ['a1', 'b1', 'a2']
    assert store.listed_runs == ['conv-a', None]


async def test_an_unknown_run_has_no_history() -> None:
    assert await SnapshotHistorySource(InMemoryStepStore()).run_history('nope') is None


async def test_a_run_without_complete_snapshots_has_an_empty_record() -> None:
    store = InMemoryStepStore()
    writer = await new_run(store, 'run-1')
    history = await SnapshotHistorySource(store).run_history('run-1')
    assert history is not None and (history.messages, history.hashes, history.version) == ((), (), -1)
    assert history.run.run_id == 'run-1' and history.run.conversation_id == 'conv'
    await store.save_snapshot(delta('run-1', 0, [], [user('u1')], state='interrupted'))
    writer.index = 1
    history = await SnapshotHistorySource(store).run_history('run-1')
    assert history is not None and history.version == -1 and not history.messages


async def test_later_calls_read_only_new_snapshots() -> None:
    store = CountingStore()
    writer = await new_run(store, 'run-1')
    u1, r1, u2, r2 = user('u1'), reply('r1'), user('u2'), reply('r2')
    await writer.save([u1])
    await writer.save([u1, r1, u2])
    source = SnapshotHistorySource(store)

    first = await source.run_history('run-1')
    unchanged = await source.run_history('run-1')
    await writer.save([u1, r1, u2, r2])
    second = await source.run_history('run-1')

    assert store.snapshot_reads == [('run-1', -1, 2), ('run-1', 1, 0), ('run-1', 1, 1)]
    assert first is not None and unchanged is not None and second is not None
    assert (first.version, unchanged.version, second.version) == (1, 1, 2)
    assert list(first.hashes) == hashes([u1, r1, u2])
    assert list(second.hashes) == hashes([u1, r1, u2, r2])


async def test_without_a_cache_every_call_reads_everything() -> None:
    store = CountingStore()
    writer = await new_run(store, 'run-1')
    await writer.save([user('u1')])
    source = SnapshotHistorySource(store, max_cached_runs=0)
    await source.run_history('run-1')
    await source.run_history('run-1')
    assert store.snapshot_reads == [('run-1', -1, 1), ('run-1', -1, 1)]


async def test_the_least_recently_used_run_leaves_the_cache() -> None:
    store = CountingStore()
    for run_id in ('a', 'b', 'c'):
        await (await new_run(store, run_id)).save([user(run_id)])
    source = SnapshotHistorySource(store, max_cached_runs=2)
    for run_id in ('a', 'b', 'a', 'c', 'a', 'b'):
        await source.run_history(run_id)
    # 'b' was the least recently used when 'c' came in; then 'c' when 'b' came back.
    assert [(run, after) for run, after, _ in store.snapshot_reads] == [
        ('a', -1),
        ('b', -1),
        ('a', 0),
        ('c', -1),
        ('a', 0),
        ('b', -1),
    ]


async def test_a_deleted_and_registered_again_run_is_rebuilt() -> None:
    store = InMemoryStepStore()
    await (await new_run(store, 'run-1')).save([user('old')])
    source = SnapshotHistorySource(store)
    assert (await source.run_history('run-1')) is not None

    await store.delete_conversation('conv')
    assert await source.run_history('run-1') is None

    await store.register_run(registration('run-1', token='token-2'))
    fresh = [user('new')]
    await Writer(store, 'run-1').save(fresh)
    history = await source.run_history('run-1')
    assert history is not None and list(history.hashes) == hashes(fresh) and history.version == 0

    # Deleted and registered again between two calls: the changed run record resets the cache.
    await store.delete_conversation('conv')
    await store.register_run(registration('run-1', token='token-3'))
    again = [user('again'), reply('r')]
    await Writer(store, 'run-1').save(again)
    history = await source.run_history('run-1')
    assert history is not None and list(history.hashes) == hashes(again) and history.version == 0


async def test_a_corrupt_snapshot_is_reported_and_the_cache_survives() -> None:
    store = CountingStore()
    writer = await new_run(store, 'run-1')
    await writer.save([user('u1')])
    source = SnapshotHistorySource(store)
    await source.run_history('run-1')
    store.fail_reads = True
    with pytest.raises(CorruptSnapshotError):
        await source.run_history('run-1')
    store.fail_reads = False
    history = await source.run_history('run-1')
    assert history is not None and history.version == 0 and len(history.messages) == 1


class SlowStore(InMemoryStepStore):
    """Yields to other tasks inside every read, so concurrent calls interleave."""

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        await anyio.sleep(0)
        snapshots = await super().list_snapshots(run_id, include_interrupted=include_interrupted, after=after)
        await anyio.sleep(0)
        return snapshots


async def test_concurrent_calls_fold_each_snapshot_once() -> None:
    store = SlowStore()
    writer = await new_run(store, 'run-1')
    u1, r1 = user('u1'), reply('r1')
    await writer.save([u1])
    source = SnapshotHistorySource(store)
    await source.run_history('run-1')
    await writer.save([u1, r1])
    await writer.save([u1, r1, user('u2')])

    results: list[int] = []

    async def read() -> None:
        history = await source.run_history('run-1')
        assert history is not None
        results.append(len(history.messages))

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(read)
    assert results == [3] * 5


async def test_over_sqlite(tmp_path: Path) -> None:
    store = SqliteStepStore(tmp_path / 'store.db')
    try:
        await store.register_run(registration('run-1'))
        u1, r1, u2 = user('u1'), reply('r1'), user('u2')
        previous: Sequence[ModelMessage] = []
        for index, snapshot in enumerate([[u1], [u1, r1, u2]]):
            await store.save_snapshot(delta('run-1', index, previous, snapshot))
            previous = snapshot
        history = await SnapshotHistorySource(store).run_history('run-1')
        assert history is not None and list(history.messages) == [u1, r1, u2]
    finally:
        await store.aclose()
