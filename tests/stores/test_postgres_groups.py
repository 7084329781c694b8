"""Rare words' open tails in shared group rows on Postgres (`stores.postgres._groups`).

Every test commits the same catch-ups to a Postgres store and to the in-memory store, whose index
keeps a row per tail, and compares what each reads back: grouping must change where postings are
kept, never what they are.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from durable_recall import ConversationSearch, SnapshotHistorySource, update_index
from durable_recall.index import OPEN, PostingsRow
from durable_recall.index._storage import Posting
from durable_recall.search import SearchRequest
from durable_recall.stores import InMemoryStepStore, PostgresStepStore, StepStore
from durable_recall.stores.postgres._groups import (
    BUCKET_SQL,
    DAMAGED_TAIL,
    GROUP_BYTES,
    GROUP_TAIL_BYTES,
    bucket_of,
    pack_group,
    unpack_group,
)

from ..search._stub import context
from ._helpers import messages, postgres_without_groups, registration, save_history
from ._index_commits import change, started, view

pytestmark = pytest.mark.anyio

_tails = st.dictionaries(st.text(min_size=0, max_size=12), st.binary(min_size=1, max_size=40), max_size=20)


@given(_tails)
def test_a_group_unpacks_to_what_was_packed(tails: dict[str, bytes]) -> None:
    assert unpack_group(pack_group(tails)) == tails


@pytest.mark.parametrize(
    'data',
    [
        pack_group({'alpha': b'\x01\x02'})[:-1],  # cut inside the tail
        b'\x05ab',  # cut inside the term
        b'\x80',  # cut inside a varint
        pack_group({'b': b'\x01'}) + pack_group({'a': b'\x01'}),  # out of order
        pack_group({'a': b'\x01'}) * 2,  # repeated
        b'\x02\xff\xfe\x01\x01',  # a term that is not UTF-8
        b'\x01a\x00',  # an empty tail
    ],
)
def test_a_damaged_group_does_not_unpack(data: bytes) -> None:
    with pytest.raises(ValueError):
        unpack_group(data)


@pytest.mark.postgres
async def test_postgres_computes_the_same_buckets(postgres_url: str) -> None:
    import psycopg

    terms = ['', 'a', 'src/app/main.py', 'naïve', '日本語', '5019ccb8bcab', *(f'w{n}' for n in range(200))]
    query = 'SELECT t, ' + BUCKET_SQL.replace('{term}', 't').replace('{bits}', '%s') + ' FROM unnest(%s::text[]) AS t'
    async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
        for bits in (0, 1, 7, 16, 24):
            cur = await conn.execute(query.encode(), (bits, terms))
            assert dict(await cur.fetchall()) == {term: bucket_of(term, bits) for term in terms}


@dataclass
class Stores:
    """A Postgres store and the in-memory store, given the same runs; where the Postgres one lives."""

    postgres: PostgresStepStore
    memory: StepStore
    url: str
    schema: str

    async def commit(self, run_id: str, **kwargs: Any) -> None:
        """The same catch-up of `run_id` (see `_index_commits.change`) committed to both."""
        for store in (self.postgres, self.memory):
            await store.index_storage().commit(await change(store, run_id, **kwargs))

    async def same(self, terms: list[str], conversation_id: str | None = 'c') -> None:
        """Both read the same postings of `terms` in the conversation and store-wide (run keys aside)."""
        for scoped in (False, True):
            found = await self.postgres.index_storage().postings(terms, conversation_id, all_scopes=scoped)
            expected = await self.memory.index_storage().postings(terms, conversation_id, all_scopes=scoped)
            assert _unkeyed(view(found)) == _unkeyed(view(expected))

    async def groups(self) -> list[dict[str, bytes]]:
        """Every group row's tails, by bucket."""
        rows = await self.query(f'SELECT terms FROM "{self.schema}".dr_index_groups ORDER BY scope_key, bucket')
        return [unpack_group(bytes(data)) for (data,) in rows]

    async def own_rows(self) -> list[tuple[str, int]]:
        """`(term, chunk)` of every postings row of its own."""
        rows = await self.query(f'SELECT term, chunk FROM "{self.schema}".dr_index_postings ORDER BY 1, 2')
        return [(term, chunk) for term, chunk in rows]

    async def query(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            cur = await conn.execute(statement.encode(), params)
            return list(await cur.fetchall()) if cur.description else []


def _unkeyed(found: dict[str, list[tuple[int, int, int]]]) -> dict[str, list[tuple[int, int]]]:
    return {term: sorted((position, tf) for _, position, tf in rows) for term, rows in found.items() if rows}


@pytest.fixture
async def stores(postgres_url: str, postgres_schema: str) -> AsyncIterator[Stores]:
    """Runs `run-1` and `run-2` of conversation `c`, and `run-3` of `d`, registered in both stores."""
    pair = Stores(
        PostgresStepStore(postgres_url, schema=postgres_schema), InMemoryStepStore(), postgres_url, postgres_schema
    )
    for store in (pair.postgres, pair.memory):
        await started(store, 'run-1', 'c')
        await started(store, 'run-2', 'c')
        await started(store, 'run-3', 'd')
    try:
        yield pair
    finally:
        await pair.postgres.aclose()


def _one(position: int) -> list[Posting]:
    return [(position, 1, 10)]


@pytest.mark.postgres
async def test_rare_words_share_group_rows_and_read_back_exactly(stores: Stores) -> None:
    rare = {f'id{n:04d}': _one(n % 3) for n in range(40)}
    await stores.commit('run-1', lengths=(3, 3, 3), postings_add=rare)
    groups = await stores.groups()
    assert len(groups) == 1  # a new scope starts with one bucket
    assert set(groups[0]) == set(rare)
    assert await stores.own_rows() == []
    await stores.same([*rare, 'absent'])


@pytest.mark.postgres
async def test_a_tail_that_outgrows_its_group_moves_to_a_row_of_its_own(stores: Stores) -> None:
    await stores.commit('run-1', lengths=(3,) * 20, postings_add={'word': _one(0), 'rare': _one(1)})
    position = 1
    seen = 0
    while len(pack_group({'word': b'\x01' * (position * 4)})) < GROUP_TAIL_BYTES + 8:
        position += 1
        await stores.commit('run-1', expected_seen=seen, seen=seen + 1, lengths=(3,) * 20,
            postings_add={'word': _one(position)},
        )  # fmt: skip
        seen += 1
    assert ('word', OPEN) in await stores.own_rows()
    [group] = await stores.groups()
    assert set(group) == {'rare'}
    await stores.commit(
        'run-2', lengths=(3,), postings_add={'word': _one(0), 'rare': _one(0)}
    )  # appends to its own row now, never to a group
    assert [set(group) for group in await stores.groups()] == [{'rare'}]
    await stores.same(['word', 'rare'])


@pytest.mark.postgres
async def test_a_scope_doubles_its_buckets_when_a_group_outgrows_its_size(stores: Stores) -> None:
    words = [f'{random.Random(n).getrandbits(48):012x}' for n in range(1500)]
    for batch in range(3):
        part = words[batch * 500 : (batch + 1) * 500]
        await stores.commit('run-1', expected_seen=batch - 1 if batch else -2, seen=batch, lengths=(3, 3),
            postings_add={word: _one(n % 2) for n, word in enumerate(part)},
        )  # fmt: skip
    groups = await stores.groups()
    assert len(groups) >= 16
    assert all(len(pack_group(group)) <= GROUP_BYTES for group in groups)
    assert sorted(term for group in groups for term in group) == sorted(words)
    await stores.same(words)
    # Another scope keeps its own buckets: one, for its one word.
    await stores.commit('run-3', postings_add={'other': _one(0)})
    await stores.same(['other', *words[:50]], 'd')


@pytest.mark.postgres
async def test_taking_a_runs_postings_out_of_grouped_tails(stores: Stores) -> None:
    await stores.commit('run-1', lengths=(3, 3), postings_add={'alpha': _one(0), 'beta': _one(1)})
    await stores.commit('run-2', lengths=(3,), postings_add={'alpha': _one(0)})
    await stores.commit('run-1', expected_seen=0, seen=1, lengths=(3, 3), postings_set={'alpha': [], 'beta': _one(0)})
    await stores.same(['alpha', 'beta'])
    found = view(await stores.postgres.index_storage().postings(['alpha', 'beta'], 'c', all_scopes=False))
    assert [position for _, position, _ in found['alpha']] == [0]  # run-2's only
    assert [position for _, position, _ in found['beta']] == [0]
    assert await stores.own_rows() == []


@pytest.mark.postgres
async def test_a_damaged_group_is_named_and_new_postings_of_its_bucket_are_kept(stores: Stores) -> None:
    index = stores.postgres.index_storage()
    await stores.commit('run-1', lengths=(3,), postings_add={f'id{n:04d}': _one(0) for n in range(10)})
    await stores.query(f'UPDATE "{stores.schema}".dr_index_groups SET terms = %s', (b'\x05ab',))
    found = await index.postings(['id0001', 'id0002'], 'c', all_scopes=False)
    assert found == {term: [PostingsRow(chunk=OPEN, postings=DAMAGED_TAIL)] for term in ('id0001', 'id0002')}
    # A later commit neither merges into the damaged row nor drops it: its tails get rows of their own.
    await index.commit(await change(stores.postgres, 'run-2', postings_add={'fresh': _one(0)}))
    assert await stores.own_rows() == [('fresh', OPEN)]
    # Its own row reads back; the damaged group of its bucket is still named alongside.
    own, damaged = (await index.postings(['fresh'], 'c', all_scopes=False))['fresh']
    assert view({'fresh': [own]})['fresh'][0][1:] == (0, 1)
    assert damaged == PostingsRow(chunk=OPEN, postings=DAMAGED_TAIL)
    rows = await stores.query(f'SELECT terms FROM "{stores.schema}".dr_index_groups')
    assert [bytes(data) for (data,) in rows] == [b'\x05ab']


@pytest.mark.postgres
async def test_a_search_names_a_damaged_group(stores: Stores) -> None:
    store = stores.postgres
    await store.register_run(registration('run-9', conversation_id='c1'))
    await save_history(store, 'run-9', [messages(0, 1)])
    assert await update_index(store) == []
    await stores.query(f'UPDATE "{stores.schema}".dr_index_groups SET terms = %s', (b'\x80',))
    search = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    answer = await search.search(context('c1'), SearchRequest(query='answer'))
    assert 'search index is damaged' in answer


@pytest.mark.postgres
async def test_an_upgraded_index_keeps_its_tail_rows_and_groups_new_words(stores: Stores) -> None:
    import psycopg

    await stores.commit('run-1', lengths=(3, 3), postings_add={'old': _one(0), 'kept': _one(1)})
    await stores.postgres.aclose()
    async with await psycopg.AsyncConnection.connect(stores.url, autocommit=True) as conn:
        await postgres_without_groups(conn, stores.schema)
        await conn.execute(f"UPDATE \"{stores.schema}\".dr_meta SET value = '11' WHERE key = 'schema_version'".encode())
    stores.postgres = PostgresStepStore(stores.url, schema=stores.schema)
    await stores.same(['old', 'kept'])  # read from the rows version 11 wrote
    await stores.commit('run-2', lengths=(3,), postings_add={'old': _one(0), 'new': _one(0)})
    assert await stores.own_rows() == [('kept', OPEN), ('old', OPEN)]
    assert [set(group) for group in await stores.groups()] == [{'new'}]
    await stores.same(['old', 'kept', 'new'])
    # A rebuild repacks: every tail grouped.
    await stores.postgres.index_storage().rebuild()
    assert await update_index(stores.postgres) == []
    assert await stores.own_rows() == []


@pytest.mark.postgres
async def test_group_rows_leave_room_on_their_page_for_the_next_version(stores: Stores) -> None:
    await stores.commit('run-1', lengths=(3,), postings_add={'alpha': _one(0)})
    found = await stores.query(
        'SELECT c.reloptions FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace'
        " WHERE n.nspname = %s AND c.relname = 'dr_index_groups'",
        (stores.schema,),
    )
    assert found == [(['fillfactor=70'],)]
