"""The index write algorithm (`apply_commits`), written once over every store's `IndexWriter`, and `run_inline`."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import pytest

from durable_recall.index import (
    FullTail,
    IndexWriter,
    RunCommit,
    StaleIndexError,
    StoredRun,
    TermChunk,
    apply_commits,
    run_inline,
)
from durable_recall.index._chunks import SEAL_AT
from durable_recall.stores import InMemoryStepStore, StepStore

from ._index_commits import change, postings, started, view


class _Suspend:
    def __await__(self) -> Generator[None]:
        yield None


class TestRunInline:
    def test_returns_what_a_coroutine_that_never_suspends_returns(self) -> None:
        async def answer() -> int:
            return 42

        assert run_inline(answer()) == 42

    def test_passes_an_error_through(self) -> None:
        async def fails() -> None:
            raise ValueError('no')

        with pytest.raises(ValueError, match='no'):
            run_inline(fails())

    def test_refuses_a_coroutine_that_suspends_and_runs_nothing_after(self) -> None:
        reached: list[str] = []

        async def suspends() -> None:
            await _Suspend()
            reached.append('after')

        with pytest.raises(RuntimeError, match='suspended'):
            run_inline(suspends())
        assert reached == []


class RecordingWriter:
    """An `IndexWriter` over a few stored runs that records every write it is asked for."""

    def __init__(self, runs: dict[str, StoredRun]) -> None:
        self.runs = runs
        self.writes: list[tuple[str, Any]] = []
        self._next_key = 100

    async def stored_run(self, run_id: str) -> StoredRun | None:
        return self.runs.get(run_id)

    async def update_scope(self, conversation_id: str | None, *, docs: int, length: int, generation: str) -> int:
        self.writes.append(('update_scope', (conversation_id, docs, length)))
        return 7

    async def put_run(self, change: RunCommit, scope_key: int, run_key: int | None) -> int:
        self.writes.append(('put_run', (change.run_id, run_key)))
        if run_key is None:
            self._next_key += 1
            return self._next_key
        return run_key

    async def chunks(self, scope_key: int, terms: Sequence[str]) -> list[TermChunk]:
        return []

    async def set_chunk(self, scope_key: int, term: str, chunk: int, postings: bytes) -> None:
        self.writes.append(('set_chunk', (term, chunk)))

    async def delete_chunk(self, scope_key: int, term: str, chunk: int) -> None:
        self.writes.append(('delete_chunk', (term, chunk)))

    async def append_tails(self, tails: Sequence[tuple[int, str, bytes]], *, full_at: int) -> list[FullTail]:
        self.writes.append(('append_tails', [(scope_key, term) for scope_key, term, _ in tails]))
        return []

    async def seal_tails(self, sealed: Sequence[tuple[int, str, int, bytes]], tails: Sequence[tuple[int, str]]) -> None:
        self.writes.append(('seal_tails', list(tails)))

    async def add_hashes(self, scope_key: int, run_key: int, hashes: Sequence[bytes]) -> None:
        self.writes.append(('add_hashes', (run_key, len(hashes))))

    async def clear_pending(self, conversation_id: str | None, run_id: str, upto: int) -> None:
        self.writes.append(('clear_pending', (conversation_id, run_id, upto)))

    async def bump_generation(self, generation: str) -> None:
        self.writes.append(('bump_generation', None))


def commit(run_id: str, *, expected_seen: int = -2, seen: int = 0, terms: Sequence[str] = ()) -> RunCommit:
    return RunCommit(
        run_id=run_id,
        conversation_id='c',
        started_at='2025-01-01T00:00:00.000000Z',
        expected_seen=expected_seen,
        seen=seen,
        upto=seen,
        first=0,
        lengths=b'',
        seqs=b'',
        roles=b'',
        times=b'',
        state=b'',
        postings_add={term: [(0, 1, 3)] for term in terms},
        hashes=[b'h' * 16],
        docs_delta=1,
        length_delta=3,
    )


def test_the_recording_writer_is_an_index_writer() -> None:
    writer: IndexWriter = RecordingWriter({})
    assert writer is not None


@pytest.mark.anyio
class TestApplyCommits:
    async def test_every_change_is_checked_before_anything_is_written(self) -> None:
        writer = RecordingWriter(
            {'run-1': StoredRun('c', None, None), 'run-2': StoredRun('c', 5, 3)},
        )

        with pytest.raises(StaleIndexError, match='run-2'):
            await apply_commits(writer, [commit('run-1', terms=['alpha']), commit('run-2', expected_seen=2)])

        assert writer.writes == []

    async def test_a_batch_whose_runs_are_all_gone_writes_nothing(self) -> None:
        writer = RecordingWriter({})

        await apply_commits(writer, [commit('run-1', terms=['alpha'])])

        assert writer.writes == []

    async def test_tails_are_appended_once_per_batch_in_key_order_and_the_generation_bumped_once(self) -> None:
        writer = RecordingWriter({'run-1': StoredRun('c', None, None), 'run-2': StoredRun('c', 4, 0)})

        await apply_commits(
            writer,
            [commit('run-1', terms=['beta', 'alpha']), commit('run-2', expected_seen=0, seen=1, terms=['alpha'])],
        )

        assert [name for name, _ in writer.writes].count('append_tails') == 1
        assert ('append_tails', [(7, 'alpha'), (7, 'beta')]) in writer.writes
        assert ('put_run', ('run-1', None)) in writer.writes
        assert ('put_run', ('run-2', 4)) in writer.writes
        assert ('clear_pending', ('c', 'run-2', 1)) in writer.writes
        assert writer.writes[-1] == ('bump_generation', None)
        assert [name for name, _ in writer.writes].count('bump_generation') == 1

    async def test_a_run_changed_twice_in_a_batch_is_checked_against_its_first_change(self) -> None:
        writer = RecordingWriter({'run-1': StoredRun('c', None, None)})

        await apply_commits(writer, [commit('run-1', seen=0), commit('run-1', expected_seen=0, seen=1)])

        assert [args for name, args in writer.writes if name == 'put_run'] == [('run-1', None), ('run-1', 101)]
        with pytest.raises(StaleIndexError):
            await apply_commits(RecordingWriter(writer.runs), [commit('run-1'), commit('run-1')])


@pytest.mark.anyio
async def test_a_run_changed_twice_in_one_batch_lands_once_on_every_store(store: StepStore) -> None:
    index = store.index_storage()
    await started(store, 'run-1', 'c', snapshots=2)

    await index.commit_many(
        [
            await change(store, 'run-1', seen=0, upto=0, postings_add={'alpha': postings((0, 1))}),
            await change(store, 'run-1', expected_seen=0, seen=1, upto=1, postings_set={'alpha': postings((0, 2))}),
        ]
    )

    row = (await index.load_runs(['run-1']))['run-1']
    assert row.seen == 1
    assert view(await index.postings(['alpha'], 'c', all_scopes=False)) == {'alpha': [(row.run_key, 0, 2)]}
    assert (await index.status('c', all_scopes=False)).pending == []


@pytest.mark.anyio
async def test_a_term_a_batch_adds_and_then_empties_leaves_no_row(store: StepStore) -> None:
    index = store.index_storage()
    await started(store, 'run-1', 'c', snapshots=2)

    await index.commit_many(
        [
            await change(store, 'run-1', seen=0, upto=0, postings_add={'alpha': postings((0, 1))}),
            await change(store, 'run-1', expected_seen=0, seen=1, upto=1, postings_set={'alpha': []}),
        ]
    )

    assert await index.postings(['alpha'], 'c', all_scopes=False) == {}


@pytest.mark.anyio
async def test_every_store_lays_out_chunks_as_the_in_memory_store_does(store: StepStore) -> None:
    reference = InMemoryStepStore()
    found: list[Any] = []
    for each in (reference, store):
        index = each.index_storage()
        for run_id in ('run-1', 'run-2', 'run-3'):
            await started(each, run_id, 'c')
        many = postings(*((position, 1) for position in range(SEAL_AT - 10)))
        await index.commit_many(
            [await change(each, run_id, postings_add={'alpha': many}) for run_id in ('run-1', 'run-2')]
        )
        await index.commit(
            await change(each, 'run-3', postings_add={'alpha': postings((0, 1)), 'beta': postings((0, 1))})
        )
        await index.commit(
            await change(each, 'run-1', expected_seen=0, seen=1, postings_set={'alpha': postings((3, 4))})
        )
        keys = {run_id: row.run_key for run_id, row in (await index.load_runs(['run-1', 'run-2', 'run-3'])).items()}
        by_run = {key: run_id for run_id, key in keys.items()}
        rows = await index.postings(['alpha', 'beta'], 'c', all_scopes=False)
        found.append(
            {
                term: [
                    (row.chunk, [(by_run[run], position, tf) for run, position, tf in view({term: [row]})[term]])
                    for row in chunks
                ]
                for term, chunks in rows.items()
            }
        )
    assert found[1] == found[0]
    assert [chunk for chunk, _ in found[0]['alpha']] == [0, 1]  # the open tail, and one sealed chunk
