"""Deleting a conversation removes its index: runs, postings, hashes, pending marks and statistics."""

from __future__ import annotations

import pytest

from durable_recall.index import ScopeStatus
from durable_recall.stores import StepStore
from durable_recall.stores.postgres._groups import unpack_group
from tests._services.stores import StoreKit

from ._index_commits import change, is_sql, pending, postings, started, view

pytestmark = pytest.mark.anyio


class TestDelete:
    async def test_deleting_a_conversation_removes_its_index(self, kit: StoreKit) -> None:
        store, index = kit.store, kit.store.index_storage()
        for run_id, conversation_id in [('c-1', 'c'), ('c-2', 'c'), ('d-1', 'd'), ('n-1', None)]:
            await started(store, run_id, conversation_id, snapshots=2)
            await index.commit(
                await change(
                    store,
                    run_id,
                    seen=0,
                    upto=0,
                    postings_add={'shared': postings((0, 1)), run_id: postings((0, 2))},
                    hashes=[b'shared', run_id.encode()],
                )
            )
        c_keys = {row.run_key for row in (await index.load_runs(['c-1', 'c-2'])).values()}
        [c_scope] = {row.scope_key for row in (await index.load_runs(['c-1', 'c-2'])).values()}
        d_before = await index.status('d', all_scopes=False)

        assert await store.delete_conversation('c') == 2

        assert await index.status('c', all_scopes=False) == ScopeStatus(generation='', pending=[], docs=0, length=0)
        assert await index.load_runs(['c-1', 'c-2']) == {}
        assert await index.scope_runs('c', all_scopes=False) == []
        assert [row.run_id for row in await index.scope_runs(None, all_scopes=True)] == ['d-1', 'n-1']
        assert await index.postings(['c-1', 'c-2'], None, all_scopes=True) == {}
        shared = (await index.postings(['shared'], None, all_scopes=True))['shared']
        assert not c_keys & {run_key for run_key, _, _ in view({'shared': shared})['shared']}
        assert len(view({'shared': shared})['shared']) == 2
        assert await index.inherited('c', [b'shared', b'c-1'], exclude_run_id='x') == set()
        assert await index.inherited('d', [b'shared'], exclude_run_id='x') == {b'shared'}
        d_after = await index.status('d', all_scopes=False)
        assert (d_after.generation, d_after.pending, d_after.docs) == (d_before.generation, ['d-1'], 1)
        everything = await index.status(None, all_scopes=True)
        assert (everything.pending, everything.docs) == (['d-1', 'n-1'], 2)

        if is_sql(kit):
            leftovers = {
                'pending': await kit.query("SELECT * FROM {pending} WHERE run_id IN ('c-1', 'c-2')"),
                'index_scopes': await kit.query("SELECT * FROM {index_scopes} WHERE conversation_id = 'c'"),
                'index_runs': await kit.query("SELECT * FROM {index_runs} WHERE run_id IN ('c-1', 'c-2')"),
                'postings by scope': await kit.query('SELECT * FROM {index_postings} WHERE scope_key = ?', c_scope),
                'hashes': await kit.query('SELECT * FROM {index_hashes} WHERE scope_key = ?', c_scope),
            }
            if kit.backend == 'postgres':
                leftovers['groups'] = await kit.query('SELECT * FROM {index_groups} WHERE scope_key = ?', c_scope)
            assert leftovers == {name: [] for name in leftovers}
            assert await stored_tails(kit) == 4
            assert await kit.query('SELECT COUNT(*) FROM {index_hashes}') == [(2,)]

    async def test_a_new_run_after_a_delete_is_indexed_afresh(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c')
        await index.commit(await change(store, 'run-1', seen=0, postings_add={'alpha': postings((0, 1))}))
        await store.delete_conversation('c')

        await started(store, 'run-2', 'c')
        assert await pending(index, 'c') == ['run-2']
        await index.commit(await change(store, 'run-2', seen=0, postings_add={'beta': postings((0, 1))}))

        status = await index.status('c', all_scopes=False)
        assert (status.pending, status.docs) == ([], 1)
        assert list(await index.postings(['alpha', 'beta'], 'c', all_scopes=False)) == ['beta']


async def stored_tails(kit: StoreKit) -> int:
    """How many postings rows the store holds, a grouped open tail counted as the row it stands for."""
    [(rows,)] = await kit.query('SELECT COUNT(*) FROM {index_postings}')
    if kit.backend != 'postgres':
        return rows
    groups = await kit.query('SELECT terms FROM {index_groups}')
    return rows + sum(len(unpack_group(bytes(data))) for (data,) in groups)
