"""`save_batch` (`BatchSaver`, the SQL stores): a run's registration and its deltas in one transaction.

`StepPersistence` sends a run's registration with its first batch; committed together, a run's
first write costs one commit, not two. The outcome must be what `register_run` then
`save_snapshots` gives: all of it or, on any error, none of it (not even the registration), and a
replay of the same batch stores nothing new.
"""

from __future__ import annotations

import pytest

from durable_recall.base import PersistBatch, RunIdConflictError, SnapshotChainError
from durable_recall.stores import BatchSaver, InMemoryStepStore
from tests._services.stores import StoreKit

from ._helpers import delta, messages, registration

pytestmark = pytest.mark.anyio


def first_batch(run_id: str = 'a', *, token: str = 'token-1') -> PersistBatch:
    return PersistBatch(
        registration=registration(run_id, token=token),
        deltas=[delta(run_id, 0, [], messages(0)), delta(run_id, 1, messages(0), messages(0, 1))],
    )


def test_the_sql_stores_offer_it_and_the_memory_store_does_not(sql_kit: StoreKit) -> None:
    assert isinstance(sql_kit.store, BatchSaver)
    assert not isinstance(InMemoryStepStore(), BatchSaver)


async def test_it_registers_the_run_and_stores_the_deltas(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    assert isinstance(store, BatchSaver)

    assert await store.save_batch(first_batch()) == [True, True]

    run = await store.get_run('a')
    assert run is not None and run.token == 'token-1' and run.conversation_id == 'conv'
    assert [s.messages for s in await store.list_snapshots('a')] == [messages(0), messages(0, 1)]


async def test_a_replay_stores_nothing_new(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    assert isinstance(store, BatchSaver)
    await store.save_batch(first_batch())

    assert await store.save_batch(first_batch()) == [False, False]
    assert len(await store.list_snapshots('a')) == 2


async def test_a_taken_run_id_stores_nothing_of_the_batch(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    assert isinstance(store, BatchSaver)
    await store.register_run(registration('a', token='another-run'))

    with pytest.raises(RunIdConflictError, match="'a'"):
        await store.save_batch(first_batch())

    assert await store.list_snapshots('a') == []
    run = await store.get_run('a')
    assert run is not None and run.token == 'another-run'


async def test_a_refused_delta_leaves_the_run_unregistered(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    assert isinstance(store, BatchSaver)
    gap = PersistBatch(registration=registration('a'), deltas=[delta('a', 1, messages(0), messages(0, 1))])

    with pytest.raises(SnapshotChainError):
        await store.save_batch(gap)

    assert await store.get_run('a') is None


async def test_a_registration_alone_registers(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    assert isinstance(store, BatchSaver)

    assert await store.save_batch(PersistBatch(registration=registration('a'), deltas=[])) == []
    assert await store.get_run('a') is not None
