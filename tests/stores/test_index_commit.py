"""Committing a run's catch-up (`commit`): run rows, postings appended, replaced and sealed, stale commits refused."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from durable_recall.index import PostingsRow, ScopeStatus, StaleIndexError
from durable_recall.index._chunks import SEAL_AT
from durable_recall.index._layout import array_length
from durable_recall.stores import StepStore

from ._index_commits import change, postings, started, view

pytestmark = pytest.mark.anyio


class TestCommit:
    async def test_a_first_commit_creates_the_run_row(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c')
        committed = await change(store, 'run-1', seen=0, lengths=[3, 4])

        await index.commit(committed)

        row = (await index.load_runs(['run-1', 'never-indexed']))['run-1']
        assert (row.run_id, row.seen, row.first) == ('run-1', 0, 0)
        assert (row.lengths, row.seqs, row.roles, row.times, row.state) == (
            committed.lengths,
            committed.seqs,
            committed.roles,
            committed.times,
            committed.state,
        )
        assert list(await index.load_runs(['never-indexed'])) == []
        [listed] = await index.scope_runs('c', all_scopes=False)
        assert (listed.run_key, listed.run_id, listed.scope_key, listed.seen, listed.lengths) == (
            row.run_key,
            'run-1',
            row.scope_key,
            0,
            committed.lengths,
        )

    async def test_a_later_commit_updates_the_row_and_keeps_its_keys(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c', snapshots=2)
        await index.commit(await change(store, 'run-1', seen=0, lengths=[3]))
        first = (await index.load_runs(['run-1']))['run-1']

        later = await change(store, 'run-1', expected_seen=0, seen=1, lengths=[3, 5])
        await index.commit(later)

        row = (await index.load_runs(['run-1']))['run-1']
        assert (row.run_key, row.scope_key) == (first.run_key, first.scope_key)
        assert (row.seen, row.lengths, row.state) == (1, later.lengths, later.state)

    async def test_the_state_is_bytes_as_written_binary_or_not(self, store: StepStore) -> None:
        index = store.index_storage()
        for run_id in ('run-1', 'run-2'):
            await started(store, run_id, 'c')
        binary = replace(await change(store, 'run-1'), state=bytes(range(256)))  # not UTF-8
        empty = replace(await change(store, 'run-2'), state=b'')
        await index.commit_many([binary, empty])

        rows = await index.load_runs(['run-1', 'run-2'])
        assert {run_id: row.state for run_id, row in rows.items()} == {'run-1': bytes(range(256)), 'run-2': b''}
        by_key = await index.runs_by_key([row.run_key for row in rows.values()])
        assert {row.run_id: row.state for row in by_key.values()} == {'run-1': bytes(range(256)), 'run-2': b''}

    async def test_postings_are_appended_replaced_and_deleted(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c', snapshots=3)
        await index.commit(
            await change(store, 'run-1', seen=0, postings_add={'alpha': postings((0, 1)), 'beta': postings((0, 2))})
        )
        run_key = (await index.load_runs(['run-1']))['run-1'].run_key

        await index.commit(
            await change(
                store,
                'run-1',
                expected_seen=0,
                seen=1,
                postings_add={'alpha': postings((1, 3)), 'gamma': postings((1, 1))},
            )
        )
        assert view(await index.postings(['alpha', 'beta', 'gamma', 'delta'], 'c', all_scopes=False)) == {
            'alpha': [(run_key, 0, 1), (run_key, 1, 3)],
            'beta': [(run_key, 0, 2)],
            'gamma': [(run_key, 1, 1)],
        }

        await index.commit(
            await change(
                store,
                'run-1',
                expected_seen=1,
                seen=2,
                postings_set={'alpha': postings((1, 3)), 'beta': [], 'missing': []},
            )
        )
        assert view(await index.postings(['alpha', 'beta', 'gamma'], 'c', all_scopes=False)) == {
            'alpha': [(run_key, 1, 3)],
            'gamma': [(run_key, 1, 1)],
        }

    async def test_a_full_open_tail_is_sealed_and_replacing_reaches_every_chunk(self, store: StepStore) -> None:
        index = store.index_storage()
        for run_id in ('run-1', 'run-2'):
            await started(store, run_id, 'c', snapshots=3)
        many = postings(*((position, 1) for position in range(SEAL_AT + 10)))
        await index.commit(await change(store, 'run-1', seen=0, postings_add={'alpha': many}))
        await index.commit(await change(store, 'run-2', seen=0, postings_add={'alpha': postings((0, 2))}))
        keys = {run_id: row.run_key for run_id, row in (await index.load_runs(['run-1', 'run-2'])).items()}

        rows = (await index.postings(['alpha'], 'c', all_scopes=False))['alpha']
        assert [row.chunk for row in rows] == [0, 1]  # the open tail (run-2) and the sealed run-1
        assert len(rows[1].postings) < (SEAL_AT + 10) * 6  # sealed chunks are packed
        expected = [(keys['run-1'], position, 1) for position in range(SEAL_AT + 10)] + [(keys['run-2'], 0, 2)]
        assert view({'alpha': rows}) == {'alpha': expected}

        await index.commit(
            await change(store, 'run-1', expected_seen=0, seen=1, postings_set={'alpha': postings((3, 4))})
        )
        assert view(await index.postings(['alpha'], 'c', all_scopes=False)) == {
            'alpha': [(keys['run-1'], 3, 4), (keys['run-2'], 0, 2)]
        }
        await index.commit(await change(store, 'run-2', expected_seen=0, seen=1, postings_set={'alpha': []}))
        assert view(await index.postings(['alpha'], 'c', all_scopes=False)) == {'alpha': [(keys['run-1'], 3, 4)]}

    async def test_a_commit_carries_thousands_of_terms(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c')
        terms = {f'term{n}': postings((0, n + 1)) for n in range(3000)}

        await index.commit(await change(store, 'run-1', seen=0, postings_add=terms))

        run_key = (await index.load_runs(['run-1']))['run-1'].run_key
        found = view(await index.postings(list(terms), 'c', all_scopes=False))
        assert found == {term: [(run_key, 0, n + 1)] for n, term in enumerate(terms)}

    async def test_postings_per_scope_and_over_all(self, store: StepStore) -> None:
        index = store.index_storage()
        for run_id, conversation_id in [('a-1', 'a'), ('a-2', 'a'), ('b-1', 'b'), ('n-1', None)]:
            await started(store, run_id, conversation_id)
            await index.commit(await change(store, run_id, seen=0, postings_add={'shared': postings((0, 1))}))
        keys = {run_id: row.run_key for run_id, row in (await index.load_runs(['a-1', 'a-2', 'b-1', 'n-1'])).items()}

        def run_keys(found: dict[str, list[PostingsRow]]) -> list[int]:
            return sorted(run_key for run_key, _, _ in view(found).get('shared', []))

        assert run_keys(await index.postings(['shared'], 'a', all_scopes=False)) == sorted([keys['a-1'], keys['a-2']])
        assert run_keys(await index.postings(['shared'], 'b', all_scopes=False)) == [keys['b-1']]
        assert run_keys(await index.postings(['shared'], None, all_scopes=False)) == [keys['n-1']]
        assert run_keys(await index.postings(['shared'], 'z', all_scopes=False)) == []
        assert run_keys(await index.postings(['shared'], 'a', all_scopes=True)) == sorted(keys.values())
        assert await index.postings([], 'a', all_scopes=True) == {}

    async def test_scope_runs_lists_a_scope_oldest_first(self, store: StepStore) -> None:
        index = store.index_storage()
        for run_id, conversation_id in [('z', 'c'), ('y', None), ('x', 'c')]:
            await started(store, run_id, conversation_id)
            await anyio.sleep(0.002)
        for run_id in ('x', 'y', 'z'):
            await index.commit(await change(store, run_id, seen=0))

        assert [row.run_id for row in await index.scope_runs('c', all_scopes=False)] == ['z', 'x']
        assert [row.run_id for row in await index.scope_runs(None, all_scopes=False)] == ['y']
        assert [row.run_id for row in await index.scope_runs('other', all_scopes=False)] == []
        assert [row.run_id for row in await index.scope_runs('c', all_scopes=True)] == ['z', 'y', 'x']

    async def test_scope_spans_list_a_conversations_runs_as_scope_runs_does(self, store: StepStore) -> None:
        index = store.index_storage()
        sizes = {'z': (3,), 'y': (1, 2), 'x': (1,) * 200, 'w': (7,) * 130}  # 200 and 130: a two-byte count
        for run_id, conversation_id in [('z', 'c'), ('y', None), ('x', 'c'), ('w', 'c')]:
            await started(store, run_id, conversation_id)
            await anyio.sleep(0.002)
        for run_id in ('x', 'y', 'z', 'w'):
            await index.commit(await change(store, run_id, seen=0, lengths=sizes[run_id]))

        for conversation_id in ('c', None, 'other'):
            listed = await index.scope_runs(conversation_id, all_scopes=False)
            spans = await index.scope_spans(conversation_id)
            assert list(spans.run_keys) == [row.run_key for row in listed]
            assert list(spans.firsts) == [row.first for row in listed]
            assert [array_length(lengths) for lengths in spans.lengths] == [len(sizes[row.run_id]) for row in listed]
        assert [array_length(lengths) for lengths in (await index.scope_spans('c')).lengths] == [1, 200, 130]

    async def test_a_wrong_expected_seen_raises_stale_and_changes_nothing(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c', snapshots=2)
        with pytest.raises(StaleIndexError):
            await index.commit(await change(store, 'run-1', expected_seen=0, seen=1))
        assert await index.load_runs(['run-1']) == {}

        await index.commit(await change(store, 'run-1', seen=0, postings_add={'alpha': postings((0, 1))}))
        before = await index.status('c', all_scopes=False)
        for expected in (-2, -1, 1):
            with pytest.raises(StaleIndexError):
                await index.commit(
                    await change(
                        store, 'run-1', expected_seen=expected, seen=1, postings_add={'alpha': postings((1, 1))}
                    )
                )

        assert await index.status('c', all_scopes=False) == before
        assert (await index.load_runs(['run-1']))['run-1'].seen == 0
        run_key = (await index.load_runs(['run-1']))['run-1'].run_key
        assert view(await index.postings(['alpha'], 'c', all_scopes=False)) == {'alpha': [(run_key, 0, 1)]}

    async def test_two_first_commits_of_one_run_race_and_one_loses(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c')
        committed = await change(store, 'run-1', seen=0, docs_delta=1, postings_add={'alpha': postings((0, 1))})
        outcomes: list[str] = []

        async def commit() -> None:
            try:
                await index.commit(committed)
            except StaleIndexError:
                outcomes.append('stale')
            else:
                outcomes.append('ok')

        async with anyio.create_task_group() as group:
            group.start_soon(commit)
            group.start_soon(commit)

        assert sorted(outcomes) == ['ok', 'stale']
        assert (await index.status('c', all_scopes=False)).docs == 1
        run_key = (await index.load_runs(['run-1']))['run-1'].run_key
        assert view(await index.postings(['alpha'], 'c', all_scopes=False)) == {'alpha': [(run_key, 0, 1)]}

    async def test_a_commit_for_a_deleted_run_is_a_no_op(self, store: StepStore) -> None:
        index = store.index_storage()
        await started(store, 'run-1', 'c')
        committed = await change(store, 'run-1', seen=0, postings_add={'alpha': postings((0, 1))}, hashes=[b'h'])
        await store.delete_conversation('c')
        everything = await index.status(None, all_scopes=True)

        await index.commit(committed)

        assert await index.load_runs(['run-1']) == {}
        assert await index.status('c', all_scopes=False) == ScopeStatus(generation='', pending=[], docs=0, length=0)
        assert await index.status(None, all_scopes=True) == everything
        assert await index.postings(['alpha'], 'c', all_scopes=True) == {}
