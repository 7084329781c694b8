"""`commit_many`: several runs' catch-ups in one transaction, sharing tails, all applied or none."""

from __future__ import annotations

import pytest

from durable_recall.index import StaleIndexError
from durable_recall.index._chunks import SEALED_MAX, decode_chunk
from durable_recall.stores import StepStore

from ._index_commits import change, pending, postings, started, view

pytestmark = pytest.mark.anyio


class TestCommitMany:
    async def test_runs_commit_together_and_their_postings_share_a_tail(self, store: StepStore) -> None:
        index = store.index_storage()
        for run_id in ('run-1', 'run-2', 'run-3'):
            await started(store, run_id, 'c')
        await index.commit_many(
            [
                await change(store, 'run-1', postings_add={'alpha': postings((0, 1))}),
                await change(store, 'run-2', postings_add={'alpha': postings((0, 2)), 'beta': postings((0, 1))}),
                await change(store, 'run-3', postings_add={'alpha': postings((0, 3))}),
            ]
        )
        keys = {run_id: row.run_key for run_id, row in (await index.load_runs(['run-1', 'run-2', 'run-3'])).items()}

        found = await index.postings(['alpha', 'beta'], 'c', all_scopes=False)
        assert [row.chunk for row in found['alpha']] == [0]
        assert view(found) == {
            'alpha': [(keys['run-1'], 0, 1), (keys['run-2'], 0, 2), (keys['run-3'], 0, 3)],
            'beta': [(keys['run-2'], 0, 1)],
        }
        assert (await index.status('c', all_scopes=False)).docs == 3
        assert await pending(index, 'c') == []

    async def test_a_stale_run_applies_nothing_of_the_batch(self, store: StepStore) -> None:
        index = store.index_storage()
        for run_id in ('run-1', 'run-2'):
            await started(store, run_id, 'c')
        await index.commit(await change(store, 'run-2', postings_add={'beta': postings((0, 1))}))
        before = await index.status('c', all_scopes=False)

        with pytest.raises(StaleIndexError):
            await index.commit_many(
                [
                    await change(store, 'run-1', postings_add={'alpha': postings((0, 1))}),
                    await change(store, 'run-2', postings_add={'alpha': postings((1, 1))}),  # already indexed
                ]
            )

        assert await index.status('c', all_scopes=False) == before
        assert await index.load_runs(['run-1']) == {}
        assert await index.postings(['alpha'], 'c', all_scopes=False) == {}

    async def test_a_batch_filling_a_tail_many_times_over_seals_it_in_pieces(self, store: StepStore) -> None:
        index = store.index_storage()
        run_ids = [f'run-{n}' for n in range(6)]
        for run_id in run_ids:
            await started(store, run_id, 'c')
        many = postings(*((position, 1) for position in range(SEALED_MAX)))
        await index.commit_many([await change(store, run_id, postings_add={'alpha': many}) for run_id in run_ids])

        rows = (await index.postings(['alpha'], 'c', all_scopes=False))['alpha']
        assert [row.chunk for row in rows] == list(range(1, 7))
        assert all(len(decode_chunk(row.chunk, row.postings).keys) == SEALED_MAX for row in rows)
        assert len(view({'alpha': rows})['alpha']) == 6 * SEALED_MAX
