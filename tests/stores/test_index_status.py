"""What the index says of a scope: the runs pending a catch-up, its statistics and its generation."""

from __future__ import annotations

import anyio
import pytest

from durable_recall.index import ScopeStatus
from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

from ._helpers import delta, messages, registration, save_history
from ._index_commits import change, pending, started

pytestmark = pytest.mark.anyio


class TestPending:
    async def test_a_saved_snapshot_marks_its_run_and_a_commit_clears_it(self, store: StepStore) -> None:
        index = store.index_storage()
        await store.register_run(registration('run-1', conversation_id='c'))
        assert await pending(index, 'c') == []

        await save_history(store, 'run-1', [messages(0)])
        assert await pending(index, 'c') == ['run-1']
        assert await pending(index, all_scopes=True) == ['run-1']
        assert await pending(index, 'other') == []

        await index.commit(await change(store, 'run-1', seen=0))
        assert await pending(index, 'c') == []

    async def test_an_idempotent_resave_marks_nothing(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c')
        await index.commit(await change(store, 'run-1', seen=0))

        assert not await store.save_snapshot(delta('run-1', 0, [], messages(0)))

        assert await pending(index, 'c') == []

    async def test_a_snapshot_saved_after_the_catch_up_read_keeps_the_mark(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c', snapshots=2)

        await index.commit(await change(store, 'run-1', seen=0, upto=0))
        assert await pending(index, 'c') == ['run-1']

        await index.commit(await change(store, 'run-1', expected_seen=0, seen=1, upto=1))
        assert await pending(index, 'c') == []

    async def test_pending_runs_are_listed_oldest_first_per_scope(self, store: StepStore) -> None:
        index = store.index_storage()
        for run_id, conversation_id in [('z', 'c'), ('y', None), ('x', 'c'), ('w', 'd')]:
            await started(store, run_id, conversation_id)
            await anyio.sleep(0.002)  # distinct start times, in the opposite order to the ids

        assert await pending(index, 'c') == ['z', 'x']
        assert await pending(index, 'd') == ['w']
        assert await pending(index, None) == ['y']
        assert await pending(index, all_scopes=True) == ['z', 'y', 'x', 'w']


class TestStatus:
    async def test_an_unindexed_scope_has_no_generation_and_no_documents(self, store: StepStore) -> None:
        await started(store, 'run-1', 'c')

        status = await store.index_storage().status('c', all_scopes=False)

        assert status == ScopeStatus(generation='', pending=['run-1'], docs=0, length=0)

    async def test_statistics_per_conversation_and_over_all(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'a-1', 'a')
        await started(store, 'a-2', 'a')
        await started(store, 'b-1', 'b')
        await started(store, 'n-1', None)
        await index.commit(await change(store, 'a-1', docs_delta=2, length_delta=10))
        await index.commit(await change(store, 'a-2', docs_delta=3, length_delta=20))
        await index.commit(await change(store, 'b-1', docs_delta=5, length_delta=40))
        await index.commit(await change(store, 'n-1', docs_delta=7, length_delta=80))

        a = await index.status('a', all_scopes=False)
        b = await index.status('b', all_scopes=False)
        none = await index.status(None, all_scopes=False)
        everything = await index.status(None, all_scopes=True)

        assert (a.docs, a.length, b.docs, b.length, none.docs, none.length) == (5, 30, 5, 40, 7, 80)
        assert (everything.docs, everything.length) == (17, 150)
        assert all(status.generation and not status.pending for status in (a, b, none, everything))
        assert len({a.generation, b.generation, none.generation}) == 3

    async def test_a_pending_row_whose_run_is_gone_is_skipped(self, sql_kit: StoreKit) -> None:
        await started(sql_kit.store, 'run-1', 'c')
        await started(sql_kit.store, 'run-2', 'c')
        await sql_kit.query("DELETE FROM {runs} WHERE run_id = 'run-1'")

        assert await pending(sql_kit.store.index_storage(), 'c') == ['run-2']
        assert await pending(sql_kit.store.index_storage(), all_scopes=True) == ['run-2']

    async def test_the_generation_changes_on_every_commit_and_delete(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'c-1', 'c')
        await started(store, 'd-1', 'd')

        async def generations() -> tuple[str, str, str]:
            c = await index.status('c', all_scopes=False)
            d = await index.status('d', all_scopes=False)
            everything = await index.status(None, all_scopes=True)
            return c.generation, d.generation, everything.generation

        c0, d0, all0 = await generations()
        assert (c0, d0) == ('', '')
        await index.commit(await change(store, 'c-1', seen=0))
        c1, d1, all1 = await generations()
        assert c1 not in ('', c0) and d1 == '' and all1 != all0

        await index.commit(await change(store, 'd-1', seen=0))
        c2, d2, all2 = await generations()
        assert c2 == c1 and d2 != '' and all2 != all1

        await index.commit(await change(store, 'c-1', expected_seen=0, seen=0, docs_delta=0, length_delta=0))
        c3, d3, all3 = await generations()
        assert c3 != c2 and d3 == d2 and all3 != all2

        await store.delete_conversation('c')
        c4, d4, all4 = await generations()
        assert c4 == '' and d4 == d3 and all4 != all3

        await store.delete_conversation('never-existed')
        assert (await generations())[2] != all4
