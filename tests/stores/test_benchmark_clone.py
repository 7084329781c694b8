"""The benchmark's filler: a cloned conversation is stored and indexed as its source is, by the store's own commit."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from benchmarks._script import generate_conversation
from benchmarks._stores import StoreSpec, clone_conversation, postgres_size, sqlite_size
from benchmarks.histories import write_conversation

from durable_recall import update_index
from durable_recall.index import IndexStorage, decode_chunk
from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

pytestmark = pytest.mark.anyio

SOURCE = 'bench-other'


def spec_of(kit: StoreKit) -> StoreSpec:
    if kit.sqlite_path is not None:
        return StoreSpec('sqlite', str(kit.sqlite_path))
    assert kit.postgres_url is not None
    return StoreSpec('postgres', kit.postgres_url, kit.postgres_schema)


async def index_of(kit: StoreKit, conversation_id: str, suffix: str = '') -> dict[str, Any]:
    """The conversation's index with run keys replaced by run ids (`suffix` taken off): comparable across copies."""
    index: IndexStorage = kit.store.index_storage()
    listed = await index.scope_runs(conversation_id, all_scopes=False)
    rows = await index.load_runs([row.run_id for row in listed])
    names = {row.run_key: row.run_id.removesuffix(suffix) for row in rows.values()}
    terms = [
        term
        for (term,) in await kit.query(
            f'SELECT DISTINCT term FROM {{index_postings}} WHERE scope_key = {listed[0].scope_key}'
        )
    ]
    postings = {
        term: sorted(
            (names[key >> 32], key & 0xFFFFFFFF, tf, length)
            for chunk in chunks
            for key, tf, length in decode_chunk(chunk.chunk, chunk.postings).entries()
        )
        for term, chunks in (await index.postings(terms, conversation_id, all_scopes=False)).items()
    }
    hashes = await kit.query(
        'SELECT i.run_id, h.hash FROM {index_hashes} AS h JOIN {index_runs} AS i ON i.run_key = h.run_key'
        f' WHERE h.scope_key = {listed[0].scope_key}'
    )
    status = await index.status(conversation_id, all_scopes=False)
    return {
        'runs': [
            (
                row.run_id.removesuffix(suffix),
                row.seen,
                row.first,
                row.lengths,
                row.seqs,
                row.roles,
                row.times,
                row.state,
                row.started_at,
            )
            for row in (rows[item.run_id] for item in listed)
        ],
        'postings': postings,
        'hashes': sorted((run_id.removesuffix(suffix), bytes(digest)) for run_id, digest in hashes),
        'statistics': (status.docs, status.length, status.pending),
    }


async def test_copies_hold_the_source_rows_and_its_index(sql_kit: StoreKit) -> None:
    store: StepStore = sql_kit.store
    await write_conversation(store, generate_conversation(5, 120, conversation_id=SOURCE), window=8)
    await update_index(store, SOURCE)
    source = await index_of(sql_kit, SOURCE)
    source_generation = (await store.index_storage().status(SOURCE, all_scopes=False)).generation
    assert source['postings'] and source['hashes']

    added = clone_conversation(spec_of(sql_kit), SOURCE, 2)
    added += clone_conversation(spec_of(sql_kit), SOURCE, 1, first=3)

    ((messages,),) = await sql_kit.query('SELECT COUNT(*) FROM {messages} WHERE {in_conversation}', SOURCE)
    assert added == 3 * messages
    for copy in (1, 2, 3):
        suffix = f'~copy{copy}'
        copied = await store.list_runs(conversation_id=SOURCE + suffix)
        assert [run.run_id for run in copied] == [
            run.run_id + suffix for run in await store.list_runs(conversation_id=SOURCE)
        ]
        for run in copied:
            original = run.run_id.removesuffix(suffix)
            assert await store.list_snapshots(run.run_id) == [
                replace(snapshot, run_id=run.run_id) for snapshot in await store.list_snapshots(original)
            ]
        assert await index_of(sql_kit, SOURCE + suffix, suffix) == source
        status = await store.index_storage().status(SOURCE + suffix, all_scopes=False)
        assert status.generation not in ('', source_generation)

    assert await update_index(store) == []  # nothing left to catch up: the copies are indexed


async def test_sizes_name_every_table_of_the_store(sql_kit: StoreKit) -> None:
    await write_conversation(sql_kit.store, generate_conversation(5, 40, conversation_id=SOURCE), window=8)
    await update_index(sql_kit.store, SOURCE)
    await sql_kit.store.aclose()

    if sql_kit.sqlite_path is not None:
        size = sqlite_size(sql_kit.sqlite_path)
    else:
        assert sql_kit.postgres_url is not None and sql_kit.postgres_schema is not None
        size = postgres_size(sql_kit.postgres_url, sql_kit.postgres_schema)

    assert {'dr_runs', 'dr_messages', 'dr_snapshots', 'dr_index_postings', 'dr_index_runs'} <= set(size.tables)
    assert size.total >= sum(size.tables[name] for name in size.tables if name != 'other')
