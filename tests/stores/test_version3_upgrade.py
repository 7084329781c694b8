"""Schema version 3: an index of a postings row per term and run (`dr_index_terms`) is emptied and rebuilt in chunks."""

from __future__ import annotations

import pytest

from durable_recall import update_index
from durable_recall.stores import PostgresStepStore, SqliteStepStore
from durable_recall.stores._migrations import SCHEMA_VERSION
from tests._services.stores import StoreKit

from ._helpers import messages, registration, save_history
from ._index_commits import pending, view
from ._log_rows import back_to_version_4

pytestmark = pytest.mark.anyio


class TestVersion3Upgrade:
    async def test_the_index_is_emptied_and_rebuilt_in_chunks(self, sql_kit: StoreKit) -> None:
        store = sql_kit.store
        for run_id, conversation_id in [('run-1', 'c'), ('run-2', None)]:
            await store.register_run(registration(run_id, conversation_id=conversation_id))
            await save_history(store, run_id, [messages(0, 1), messages(0, 1, 2, 3)])
        await update_index(store)
        # A version 3 index: postings a row per term and run, in `dr_index_terms`.
        await back_to_version_4(sql_kit)
        await sql_kit.query('DROP TABLE {index_postings}')
        await sql_kit.query('CREATE TABLE {index_terms} (term TEXT NOT NULL)')
        await sql_kit.query("UPDATE {meta} SET value = '3' WHERE key = 'schema_version'")
        await sql_kit.query('DELETE FROM {pending}')
        await store.aclose()

        if sql_kit.sqlite_path is not None:
            sql_kit.store = SqliteStepStore(sql_kit.sqlite_path)
        else:
            sql_kit.store = PostgresStepStore(sql_kit.postgres_url or '', schema=sql_kit.postgres_schema)
        store, index = sql_kit.store, sql_kit.store.index_storage()

        assert await index.load_runs(['run-1', 'run-2']) == {}
        assert await pending(index, all_scopes=True) == ['run-1', 'run-2']
        assert await sql_kit.query("SELECT value FROM {meta} WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
        await update_index(store)
        assert set(await index.load_runs(['run-1', 'run-2'])) == {'run-1', 'run-2'}
        assert [run_id for run_id, _, _ in view(await index.postings(['answer'], 'c', all_scopes=False))['answer']] == [
            (await index.load_runs(['run-1']))['run-1'].run_key
        ] * 2
        with pytest.raises(Exception, match='dr_index_terms'):
            await sql_kit.query('SELECT * FROM {index_terms}')
