"""A small read of Postgres logs is decoded in the caller's thread, a big one in a worker thread."""

from __future__ import annotations

from typing import Any

import pytest

from durable_recall.stores import PostgresStepStore

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


async def test_a_small_read_of_logs_is_decoded_without_a_worker_thread(
    postgres_url: str, postgres_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio.to_thread

    from durable_recall.stores.postgres import _store

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0, 1, 2)])
    handed: list[object] = []
    real = anyio.to_thread.run_sync

    async def counting(function: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(function)
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, 'run_sync', counting)
    small = await store.read_logs({'run-1': [0, 2]})
    inline = len(handed)
    monkeypatch.setattr(_store, '_INLINE_DECODE', 1)  # every read is now big
    big = await store.read_logs({'run-1': [0, 2]})
    await store.aclose()

    assert small == big == {'run-1': {0: messages(0)[0], 2: messages(2)[0]}}
    assert inline == 0
    assert len(handed) == 1
