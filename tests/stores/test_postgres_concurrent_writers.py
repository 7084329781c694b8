"""Several Postgres stores on one schema at once: the first use migrates once, a delta is appended once."""

from __future__ import annotations

import anyio
import pytest

from durable_recall.base._codec import dump_messages
from durable_recall.base._records import SnapshotDelta
from durable_recall.stores import PostgresStepStore

from ._helpers import messages, registration

pytestmark = pytest.mark.anyio


async def test_concurrent_first_use_migrates_once(postgres_url: str, postgres_schema: str) -> None:
    stores = [PostgresStepStore(postgres_url, schema=postgres_schema) for _ in range(4)]
    results: list[object] = []

    async def first_use(store: PostgresStepStore, n: int) -> None:
        results.append(await store.register_run(registration(f'run-{n}')))

    async with anyio.create_task_group() as group:
        for n, store in enumerate(stores):
            group.start_soon(first_use, store, n)

    assert len(results) == 4
    assert len(await stores[0].list_runs()) == 4
    for store in stores:
        await store.aclose()


async def test_concurrent_saves_of_one_delta_append_once(postgres_url: str, postgres_schema: str) -> None:
    writers = [PostgresStepStore(postgres_url, schema=postgres_schema) for _ in range(3)]
    await writers[0].register_run(registration('run-1'))
    outcomes: list[bool] = []
    for index in range(8):
        bodies = dump_messages(messages(index * 2, index * 2 + 1))
        segments = [(0, index * 2), (-1, 2)] if index else [(-1, 2)]
        delta = SnapshotDelta(
            run_id='run-1', index=index, step_index=index, state='complete', segments=segments, messages=bodies
        )

        async def save(store: PostgresStepStore, delta: SnapshotDelta = delta) -> None:
            outcomes.append(await store.save_snapshot(delta))

        async with anyio.create_task_group() as group:
            for store in writers:
                group.start_soon(save, store)
        assert sorted(outcomes[-3:]) == [False, False, True]

    latest = await writers[1].latest_snapshot('run-1')
    assert latest is not None
    assert latest.messages == messages(*range(16))
    for store in writers:
        await store.aclose()
