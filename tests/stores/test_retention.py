"""Retention: `prune_idle` deletes conversations idle past a cutoff, idempotently, while writers run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest

from durable_recall.errors import StoreConfigurationError
from durable_recall.stores import PostgresStepStore, Pruned, SqliteStepStore, StepStore, prune_idle
from tests._services.stores import StoreKit

from ._helpers import delta, messages, registration, save_history

pytestmark = pytest.mark.anyio


async def write(store: StepStore, conversation_id: str, run_id: str) -> None:
    await store.register_run(registration(run_id, conversation_id=conversation_id))
    await save_history(store, run_id, [messages(0, 1), messages(0, 1, 2, 3)])


def second_store(kit: StoreKit) -> StepStore:
    """Another store on the same database: its own connection, as another process would have."""
    if kit.sqlite_path is not None:
        return SqliteStepStore(kit.sqlite_path)
    assert kit.postgres_url is not None
    return PostgresStepStore(kit.postgres_url, schema=kit.postgres_schema)


async def test_prune_deletes_what_is_idle_past_the_cutoff_and_nothing_else(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    await write(store, 'old-1', 'run-old-1')
    await write(store, 'old-2', 'run-old-2')
    cutoff = datetime.now(UTC)
    await anyio.sleep(0.01)
    await write(store, 'new', 'run-new')
    now = cutoff + timedelta(days=90)

    dry = await prune_idle(store, idle_for=timedelta(days=90), now=now, dry_run=True)
    assert [c.conversation_id for c in dry.conversations] == ['old-1', 'old-2']
    assert dry.deleted == {} and dry.scrub is None
    assert await store.list_conversations() == ['new', 'old-1', 'old-2']

    pruned = await prune_idle(store, idle_for=timedelta(days=90), now=now)
    assert pruned.deleted == {'old-1': 1, 'old-2': 1}
    assert pruned.scrub is not None and pruned.scrub.complete
    assert await store.list_conversations() == ['new']
    assert [s.messages for s in await store.list_snapshots('run-new')][-1] == messages(0, 1, 2, 3)

    again = await prune_idle(store, idle_for=timedelta(days=90), now=now)
    assert again.conversations == () and again.deleted == {} and again.scrub is None


async def test_a_snapshot_saved_after_the_cutoff_keeps_an_old_run_s_conversation(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    await store.register_run(registration('run-long', conversation_id='long'))
    assert await store.save_snapshot(delta('run-long', 0, [], messages(0, 1)))
    cutoff = datetime.now(UTC)
    await anyio.sleep(0.01)
    assert await store.save_snapshot(delta('run-long', 1, messages(0, 1), messages(0, 1, 2, 3)))

    pruned = await prune_idle(store, idle_for=timedelta(days=1), now=cutoff + timedelta(days=1))
    assert pruned.conversations == () and await store.list_conversations() == ['long']


async def test_a_conversation_that_turns_active_after_the_listing_is_kept(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    await write(store, 'woken', 'run-woken')
    cutoff = datetime.now(UTC)
    await anyio.sleep(0.01)
    assert isinstance(store, SqliteStepStore | PostgresStepStore)
    [idle] = await store.idle_conversations(cutoff)
    assert idle.conversation_id == 'woken' and idle.last_activity < cutoff
    await write(store, 'woken', 'run-woken-2')  # a writer, between the listing and the delete

    assert await store.delete_idle_conversation('woken', cutoff) is None
    assert {run.run_id for run in await store.list_runs(conversation_id='woken')} == {'run-woken', 'run-woken-2'}


async def test_prune_is_safe_while_a_writer_saves(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    idle = [f'idle-{n}' for n in range(6)]
    for conversation_id in idle:
        await write(store, conversation_id, f'run-{conversation_id}')
    await store.register_run(registration('run-live', conversation_id='live'))
    history = [messages(*range(n + 1)) for n in range(40)]
    assert await store.save_snapshot(delta('run-live', 0, [], history[0]))
    cutoff = datetime.now(UTC)
    await anyio.sleep(0.01)
    writer = second_store(sql_kit)
    assert await writer.save_snapshot(delta('run-live', 1, history[0], history[1]))
    written: list[int] = []
    outcomes: list[Pruned] = []

    async def keep_writing() -> None:
        for index in range(2, len(history)):
            assert await writer.save_snapshot(delta('run-live', index, history[index - 1], history[index]))
            written.append(index)
            if index % 5 == 0:
                await write(writer, 'busy', f'run-busy-{index}')

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(keep_writing)
            outcomes.append(await prune_idle(store, idle_for=timedelta(days=90), now=cutoff + timedelta(days=90)))
    finally:
        await writer.aclose()

    [pruned] = outcomes
    assert sorted(pruned.deleted) == idle
    assert written == list(range(2, len(history)))
    assert [s.messages for s in await store.list_snapshots('run-live')] == history
    assert sorted(await store.list_conversations()) == ['busy', 'live']


async def test_idle_for_must_be_positive(sql_kit: StoreKit) -> None:
    with pytest.raises(StoreConfigurationError, match='idle_for must be positive'):
        await prune_idle(sql_kit.store, idle_for=timedelta(0))
