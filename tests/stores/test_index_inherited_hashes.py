"""`inherited`: the hashes a conversation's other runs hold, which a new run of it does not index again."""

from __future__ import annotations

import pytest

from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

from ._index_commits import change, is_sql, started

pytestmark = pytest.mark.anyio


class TestInherited:
    async def test_hashes_held_by_another_run_of_the_conversation(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c')
        await started(store, 'run-2', 'c')
        await started(store, 'other-1', 'd')
        await index.commit(await change(store, 'run-1', seen=0, hashes=[b'h1', b'h2']))
        await index.commit(await change(store, 'run-2', seen=0, hashes=[b'h2', b'h3']))
        await index.commit(await change(store, 'other-1', seen=0, hashes=[b'h4']))

        asked = [b'h1', b'h2', b'h3', b'h4', b'h5']
        assert await index.inherited('c', asked, exclude_run_id='run-3') == {b'h1', b'h2', b'h3'}
        # h2 stays run-1's: the first run to hold a hash keeps it.
        assert await index.inherited('c', asked, exclude_run_id='run-2') == {b'h1', b'h2'}
        assert await index.inherited('c', asked, exclude_run_id='run-1') == {b'h3'}
        assert await index.inherited('d', asked, exclude_run_id='run-1') == {b'h4'}
        assert await index.inherited('e', asked, exclude_run_id='run-1') == set()
        assert await index.inherited('c', [], exclude_run_id='run-1') == set()

    async def test_runs_without_a_conversation_keep_no_hashes(self, kit: StoreKit) -> None:
        index = kit.store.index_storage()
        await started(kit.store, 'run-1', None)

        await index.commit(await change(kit.store, 'run-1', seen=0, hashes=[b'h1']))

        assert (await index.load_runs(['run-1']))['run-1'].seen == 0
        if is_sql(kit):
            assert await kit.query('SELECT COUNT(*) FROM {index_hashes}') == [(0,)]
