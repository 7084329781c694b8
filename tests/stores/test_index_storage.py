"""The stores' half of the persistent index (`IndexStorage`), the same behaviour on every backend."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from durable_recall import update_index
from durable_recall.base import _errors
from durable_recall.base._codec import dump_messages
from durable_recall.base._time import format_timestamp
from durable_recall.index import IndexStorage, PostingsRow, RunCommit, ScopeStatus, StaleIndexError
from durable_recall.index._chunks import SEAL_AT, SEALED_MAX, decode_chunk
from durable_recall.index._layout import ROLE_CODES, array_length, encode_floats, encode_ints
from durable_recall.index._storage import Posting
from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores._migrations import (
    POSTGRES_META,
    POSTGRES_MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_META,
    SQLITE_MIGRATIONS,
)
from durable_recall.stores.postgres._groups import unpack_group
from tests._services.stores import StoreKit

from ._helpers import delta, messages, registration, save_history
from ._log_rows import back_to_version_4

pytestmark = pytest.mark.anyio

INDEX_TABLES = ('pending', 'index_scopes', 'index_runs', 'index_postings', 'index_hashes')


def postings(*pairs: tuple[int, int]) -> list[Posting]:
    """Postings of `(position, tf)` pairs, each document 10 tokens long."""
    return [(position, tf, 10) for position, tf in pairs]


def view(found: dict[str, list[PostingsRow]]) -> dict[str, list[tuple[int, int, int]]]:
    """Each term's postings as sorted `(run key, position, tf)`, whatever chunks hold them."""
    return {
        term: sorted(
            (key >> 32, key & 0xFFFFFFFF, tf)
            for row in rows
            for key, tf, _ in decode_chunk(row.chunk, row.postings).entries()
        )
        for term, rows in found.items()
    }


async def change(
    store: StepStore,
    run_id: str,
    *,
    expected_seen: int = -2,
    seen: int = 0,
    upto: int | None = None,
    lengths: Sequence[int] = (3,),
    postings_add: dict[str, list[Posting]] | None = None,
    postings_set: dict[str, list[Posting]] | None = None,
    hashes: Sequence[bytes] = (),
    docs_delta: int = 1,
    length_delta: int = 3,
) -> RunCommit:
    """A catch-up of a registered run; its per-position arrays follow `lengths`."""
    record = await store.get_run(run_id)
    assert record is not None
    return RunCommit(
        run_id=run_id,
        conversation_id=record.conversation_id,
        started_at=format_timestamp(record.started_at),
        expected_seen=expected_seen,
        seen=seen,
        upto=seen if upto is None else upto,
        first=0,
        lengths=encode_ints(lengths),
        seqs=encode_ints(range(len(lengths))),
        roles=encode_ints(ROLE_CODES['user'] for _ in lengths),
        times=encode_floats([1.5] * len(lengths)),
        state=f'{{"seen": {seen}}}'.encode(),
        postings_add=postings_add or {},
        postings_set=postings_set or {},
        hashes=hashes,
        docs_delta=docs_delta,
        length_delta=length_delta,
    )


async def started(store: StepStore, run_id: str, conversation_id: str | None, snapshots: int = 1) -> None:
    """Register a run and save `snapshots` snapshots of it."""
    await store.register_run(registration(run_id, conversation_id=conversation_id))
    await save_history(store, run_id, [messages(*range(n + 1)) for n in range(snapshots)])


async def pending(index: IndexStorage, conversation_id: str | None = None, *, all_scopes: bool = False) -> list[str]:
    return (await index.status(conversation_id, all_scopes=all_scopes)).pending


def is_sql(kit: StoreKit) -> bool:
    return kit.sqlite_path is not None or kit.postgres_url is not None


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


class TestMessages:
    async def test_read_messages_by_log_number(self, store: StepStore) -> None:
        await store.register_run(registration('run-1'))
        await save_history(store, 'run-1', [messages(0, 1), messages(0, 1, 2, 3)])
        latest = await store.latest_snapshot('run-1')
        assert latest is not None

        found = await store.read_messages('run-1', [3, 1, 99, -1, 1])

        assert found == {1: latest.messages[1], 3: latest.messages[3]}
        assert list(found) == [1, 3]
        assert await store.read_messages('run-1', []) == {}
        assert await store.read_messages('no-such-run', [0]) == {}

    async def test_snapshot_seqs_stay_aligned_through_a_compaction(self, store: StepStore) -> None:
        await store.register_run(registration('run-1'))
        history = [messages(0, 1, 2, 3, 4, 5), messages(0, 4, 5), messages(0, 4, 5, 6)]
        await save_history(store, 'run-1', history)

        snapshots = await store.list_snapshots('run-1')
        latest = await store.latest_snapshot('run-1')

        assert [snapshot.seqs for snapshot in snapshots] == [[0, 1, 2, 3, 4, 5], [0, 4, 5], [0, 4, 5, 6]]
        assert latest is not None and latest.seqs == snapshots[-1].seqs
        for snapshot in snapshots:
            found = await store.read_messages('run-1', snapshot.seqs)
            assert [found[seq] for seq in snapshot.seqs] == snapshot.messages

    async def test_a_body_that_does_not_decode_raises_corrupt(self, sql_kit: StoreKit) -> None:
        await sql_kit.store.register_run(registration('run-1'))
        await save_history(sql_kit.store, 'run-1', [messages(0, 1)])
        await sql_kit.query("UPDATE {messages} SET body = 'garbage' WHERE {of_run} AND seq = 1", 'run-1')

        assert await sql_kit.store.read_messages('run-1', [0]) == {0: messages(0)[0]}
        with pytest.raises(_errors.CorruptSnapshotError) as caught:
            await sql_kit.store.read_messages('run-1', [0, 1])
        assert (caught.value.run_id, caught.value.index) == ('run-1', -1)


def v1_rows() -> list[tuple[str, tuple[Any, ...]]]:
    """Rows a version-1 store held: two runs with snapshots (one without a conversation), one without."""
    bodies = dump_messages(messages(0, 1, 2))
    at = '2025-01-01T00:00:0{}.000000+00:00'
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('with-snapshots', 'c', '{}', at.format(1), 't')),
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('no-conversation', None, '{}', at.format(2), 't')),
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', ('no-snapshots', 'c', '{}', at.format(3), 't')),
    ]
    for run_id, sizes in [('with-snapshots', (2, 3)), ('no-conversation', (1,))]:
        for seq, body in enumerate(bodies[: max(sizes)]):
            rows.append(('INSERT INTO {messages} VALUES (?, ?, ?)', (run_id, seq, body)))
        for index, size in enumerate(sizes):
            rows.append(
                (
                    'INSERT INTO {snapshots} VALUES (?, ?, ?, ?, ?, ?, ?)',
                    (run_id, index, index, 'complete', at.format(4), f'[[0,{size}]]', size),
                )
            )
    return rows


async def check_upgraded(store: StepStore) -> None:
    index = store.index_storage()
    assert await pending(index, 'c') == ['with-snapshots']
    assert await pending(index, None) == ['no-conversation']
    assert await pending(index, all_scopes=True) == ['with-snapshots', 'no-conversation']
    assert (await index.status(None, all_scopes=True)).generation != ''
    latest = await store.latest_snapshot('with-snapshots')
    assert latest is not None and latest.messages == messages(0, 1, 2) and latest.seqs == [0, 1, 2]
    # The backfilled mark holds the last snapshot index: a catch-up that read it clears the mark.
    await index.commit(await change(store, 'with-snapshots', seen=1, upto=0))
    assert await pending(index, 'c') == ['with-snapshots']
    await index.commit(await change(store, 'with-snapshots', expected_seen=1, seen=1, upto=1))
    assert await pending(index, 'c') == []


class TestMigration:
    async def test_a_version_1_sqlite_file_is_upgraded_and_backfilled(self, tmp_path: Path) -> None:
        path = tmp_path / 'v1.db'
        names = {name: f'dr_{name}' for name in ('meta', 'runs', 'messages', 'snapshots')}
        with closing(sqlite3.connect(path, isolation_level=None)) as conn:
            conn.execute(SQLITE_META)
            for statement in SQLITE_MIGRATIONS[0]:
                conn.execute(statement)
            conn.execute("INSERT INTO dr_meta VALUES ('schema_version', '1')")
            for statement, params in v1_rows():
                conn.execute(statement.format(**names), params)

        store = SqliteStepStore(path)
        try:
            await check_upgraded(store)
        finally:
            await store.aclose()
        with closing(sqlite3.connect(path)) as conn:
            found = conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall()
            assert found == [(str(SCHEMA_VERSION),)]

    async def test_a_version_1_postgres_schema_is_upgraded_and_backfilled(
        self, postgres_url: str, postgres_schema: str
    ) -> None:
        import psycopg

        names = {name: f'"{postgres_schema}".dr_{name}' for name in ('meta', 'runs', 'messages', 'snapshots')}
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            for statement in (POSTGRES_META, *POSTGRES_MIGRATIONS[0]):
                await conn.execute(statement.format(**names).encode())
            await conn.execute(f"INSERT INTO {names['meta']} VALUES ('schema_version', '1')".encode())
            for statement, params in v1_rows():
                await conn.execute(statement.format(**names).replace('?', '%s').encode(), params)

        store = PostgresStepStore(postgres_url, schema=postgres_schema)
        try:
            await check_upgraded(store)
        finally:
            await store.aclose()


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


async def stored_tails(kit: StoreKit) -> int:
    """How many postings rows the store holds, a grouped open tail counted as the row it stands for."""
    [(rows,)] = await kit.query('SELECT COUNT(*) FROM {index_postings}')
    if kit.backend != 'postgres':
        return rows
    groups = await kit.query('SELECT terms FROM {index_groups}')
    return rows + sum(len(unpack_group(bytes(data))) for (data,) in groups)
