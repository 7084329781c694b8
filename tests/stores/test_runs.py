"""Run records: registration, idempotency, listing and deletion, on every store."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import pytest

from durable_recall.base import _errors
from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


async def test_register_and_get(store: StepStore) -> None:
    before = datetime.now(UTC)
    record = await store.register_run(
        registration(
            'run-1',
            conversation_id='conv-1',
            parent_run_id='parent-0',
            agent_name='support',
            metadata={'tier': 'gold', 'lang': 'fr-ünï'},
            token='tok-a',
        )
    )
    after = datetime.now(UTC)

    assert (record.run_id, record.conversation_id, record.parent_run_id, record.agent_name, record.token) == (
        'run-1',
        'conv-1',
        'parent-0',
        'support',
        'tok-a',
    )
    assert dict(record.metadata) == {'tier': 'gold', 'lang': 'fr-ünï'}
    assert record.started_at.utcoffset() is not None
    assert before <= record.started_at <= after
    assert await store.get_run('run-1') == record
    assert await store.get_run('missing') is None


async def test_register_without_conversation(store: StepStore) -> None:
    record = await store.register_run(registration('solo', conversation_id=None))

    assert record.conversation_id is None
    assert await store.get_run('solo') == record
    assert await store.list_conversations() == []


async def test_register_is_idempotent_per_token(store: StepStore) -> None:
    first = await store.register_run(registration('run-1', agent_name='a', token='tok'))
    await anyio.sleep(0.002)
    again = await store.register_run(registration('run-1', agent_name='changed', token='tok'))

    assert again == first
    assert await store.list_runs() == [first]


async def test_register_with_another_token_conflicts(store: StepStore) -> None:
    first = await store.register_run(registration('run-1', token='tok-a'))

    with pytest.raises(_errors.RunIdConflictError) as caught:
        await store.register_run(registration('run-1', token='tok-b'))

    assert caught.value.run_id == 'run-1'
    assert await store.get_run('run-1') == first


async def test_list_runs_orders_by_start_and_ands_filters(store: StepStore) -> None:
    # Registered in reverse name order, so time order and name order disagree.
    ids = ['run-d', 'run-c', 'run-b', 'run-a']
    shapes = [('conv-1', None), ('conv-1', 'run-d'), ('conv-2', 'run-d'), (None, None)]
    records = []
    for run_id, (conversation_id, parent_run_id) in zip(ids, shapes, strict=True):
        records.append(
            await store.register_run(registration(run_id, conversation_id=conversation_id, parent_run_id=parent_run_id))
        )
        await anyio.sleep(0.002)

    assert [r.run_id for r in await store.list_runs()] == ids
    assert await store.list_runs() == records
    assert [r.run_id for r in await store.list_runs(conversation_id='conv-1')] == ['run-d', 'run-c']
    assert [r.run_id for r in await store.list_runs(parent_run_id='run-d')] == ['run-c', 'run-b']
    assert [r.run_id for r in await store.list_runs(conversation_id='conv-1', parent_run_id='run-d')] == ['run-c']
    assert await store.list_runs(conversation_id='conv-2', parent_run_id='nobody') == []
    assert await store.list_runs(conversation_id='unknown') == []


async def test_list_conversations_is_sorted_by_code_point(store: StepStore) -> None:
    for n, conversation_id in enumerate(['beta', 'Ålborg', 'alpha', 'Zeta', 'beta', None]):
        await store.register_run(registration(f'run-{n}', conversation_id=conversation_id))

    assert await store.list_conversations() == ['Zeta', 'alpha', 'beta', 'Ålborg']


async def test_delete_conversation_removes_runs_snapshots_and_messages(kit: StoreKit) -> None:
    store = kit.store
    for run_id, conversation_id in [('a1', 'conv-a'), ('a2', 'conv-a'), ('b1', 'conv-b')]:
        await store.register_run(registration(run_id, conversation_id=conversation_id))
        await save_history(store, run_id, [messages(0, 1), messages(0, 1, 2, 3)])
    kept = await store.list_snapshots('b1')

    assert await store.delete_conversation('conv-a') == 2

    assert [r.run_id for r in await store.list_runs()] == ['b1']
    assert await store.list_conversations() == ['conv-b']
    for run_id in ('a1', 'a2'):
        assert await store.get_run(run_id) is None
        assert await store.list_snapshots(run_id, include_interrupted=True) == []
        assert await store.latest_snapshot(run_id, include_interrupted=True) is None
        if kit.backend != 'memory':
            assert await kit.log_size(run_id) == 0
    assert await store.list_snapshots('b1') == kept
    assert await store.delete_conversation('conv-a') == 0
    assert await store.delete_conversation('never') == 0


async def test_a_deleted_run_id_can_be_registered_afresh(store: StepStore) -> None:
    await store.register_run(registration('run-1', conversation_id='old', token='tok-a'))
    await save_history(store, 'run-1', [messages(0)])
    await store.delete_conversation('old')

    record = await store.register_run(registration('run-1', conversation_id='new', token='tok-b'))

    assert record.token == 'tok-b'
    assert await store.list_snapshots('run-1') == []
    await save_history(store, 'run-1', [messages(5)])
    assert [s.messages for s in await store.list_snapshots('run-1')] == [messages(5)]
