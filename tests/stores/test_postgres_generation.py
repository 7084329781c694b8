"""On Postgres, commits of different conversations share no row: the store-wide generation is derived.

Every catch-up commit used to write the store-wide index generation (one row of `dr_meta`), so
concurrent commits of different conversations queued on that row's lock until each committed,
holding their pooled connections. A commit now gives only its own scope a new generation; the
store-wide one (what a store-wide search caches by) is derived from the scopes' generations and
the stored value, so it still changes with every commit, deletion and rebuild.
"""

from __future__ import annotations

import pytest

from durable_recall import PostgresStepStore
from durable_recall.index import update_index

from ._helpers import messages, registration, save_history

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


async def _meta(store: PostgresStepStore, url: str, schema: str) -> str:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(f'SELECT value FROM "{schema}".dr_meta WHERE key = %s', ('index_generation',))  # pyright: ignore[reportArgumentType]
        row = await cur.fetchone()
    assert row is not None
    return row[0]


async def test_the_store_wide_generation_moves_without_a_shared_row(postgres_url: str, postgres_schema: str) -> None:
    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    index = store.index_storage()
    await store.register_run(registration('run-a', conversation_id='a'))
    await save_history(store, 'run-a', [messages(0, 1)])
    await update_index(store)
    stored = await _meta(store, postgres_url, postgres_schema)
    before = (await index.status(None, all_scopes=True)).generation

    await store.register_run(registration('run-b', conversation_id='b'))
    await save_history(store, 'run-b', [messages(2, 3)])
    assert await update_index(store, 'b') == []
    after = await index.status(None, all_scopes=True)
    assert after.generation != before and after.docs == 4
    assert await _meta(store, postgres_url, postgres_schema) == stored, 'a commit wrote the shared row'
    viewed = await index.view(None, all_scopes=True, terms=['question'], known=after.generation)
    assert viewed.status.generation == after.generation and not viewed.moved

    await store.delete_conversation('a')
    gone = await index.status(None, all_scopes=True)
    assert gone.generation not in (before, after.generation) and gone.docs == 2
    await store.aclose()
