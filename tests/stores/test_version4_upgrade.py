"""Schema version 4 to 5: reference rows become ranges, and the index state becomes bytes.

A version-4 store is built row by row, as that release wrote it: a row per inherited message in
`dr_messages` (no body, `ref_run_id` and `ref_seq` naming the row holding it), and JSON text in
`dr_index_runs.state`. Opened by this release, it must read back exactly as it did.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from durable_recall.base import StoredBody, encode_body
from durable_recall.base._codec import dump_messages
from durable_recall.stores import PostgresStepStore, SqliteStepStore
from durable_recall.stores._migrations import (
    POSTGRES_META,
    POSTGRES_MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_META,
    SQLITE_MIGRATIONS,
)
from durable_recall.stores.postgres._connect import TABLES
from tests._services.stores import StoreKit

from ._helpers import message, messages, registration
from ._log_rows import log_entries, ref_ranges
from .test_inherited_log import based

pytestmark = pytest.mark.anyio

_AT = '2025-01-01T00:00:0{}.000000+00:00'
_STATE = '{"seen":1,"size":3}'

# The child's log: a body, parent entries 1..3 (one range), parent entry 0, a body, parent entries
# 6..7 (the same shift as 1..3, but not adjacent: a range of its own), and entries 0 and 5 of the
# child again in the grandchild (a version-4 reference always named the row holding the body).
_PARENT = list(range(8))
_CHILD: list[tuple[int, str | None]] = [
    (10, None),
    (1, 'parent'),
    (2, 'parent'),
    (3, 'parent'),
    (0, 'parent'),
    (15, None),
    (6, 'parent'),
    (7, 'parent'),
]
_GRANDCHILD: list[tuple[int, str | None]] = [(10, 'child'), (1, 'parent'), (2, 'parent'), (15, 'child'), (20, None)]
_CHILD_SEQ = {10: 0, 15: 5}  # the child's own bodies by message number


def _body(number: int, compressed: bool) -> StoredBody:
    [text] = dump_messages([message(number)])
    return encode_body(text) if compressed else text


def _message_row(backend: str, run_id: str, seq: int, body: StoredBody) -> tuple[str, tuple[Any, ...]]:
    if backend == 'sqlite' or isinstance(body, str):
        return 'INSERT INTO {messages} (run_id, seq, body) VALUES (?, ?, ?)', (run_id, seq, body)
    return 'INSERT INTO {messages} (run_id, seq, data) VALUES (?, ?, ?)', (run_id, seq, body)


def _v4_rows(backend: str) -> list[tuple[str, tuple[Any, ...]]]:
    """A version-4 store's rows: three runs of one conversation referring to each other, and an indexed run."""
    rows: list[tuple[str, tuple[Any, ...]]] = [
        ('INSERT INTO {runs} VALUES (?, ?, NULL, NULL, ?, ?, ?)', (run_id, 'c', '{}', _AT.format(n), 't'))
        for n, run_id in enumerate(('parent', 'child', 'grandchild'))
    ]
    for seq in _PARENT:
        rows.append(_message_row(backend, 'parent', seq, _body(seq, compressed=seq % 2 == 1)))
    for run_id, log in (('child', _CHILD), ('grandchild', _GRANDCHILD)):
        for seq, (number, ref_run_id) in enumerate(log):
            if ref_run_id is None:
                rows.append(_message_row(backend, run_id, seq, _body(number, compressed=True)))
            else:
                at = number if ref_run_id == 'parent' else _CHILD_SEQ[number]
                rows.append(
                    (
                        'INSERT INTO {messages} (run_id, seq, ref_run_id, ref_seq) VALUES (?, ?, ?, ?)',
                        (run_id, seq, ref_run_id, at),
                    )
                )
    snapshots = [
        ('parent', 0, 'complete', '[[0,4]]', 4),
        ('parent', 1, 'complete', '[[0,8]]', 8),
        ('child', 0, 'complete', '[[0,8]]', 8),
        ('child', 1, 'interrupted', '[[1,8]]', 7),
        ('grandchild', 0, 'complete', '[[0,5]]', 5),
    ]
    for run_id, index, state, ranges, size in snapshots:
        rows.append(
            (
                'INSERT INTO {snapshots} VALUES (?, ?, ?, ?, ?, ?, ?)',
                (run_id, index, index, state, _AT.format(5), ranges, size),
            )
        )
    rows.append(('INSERT INTO {index_scopes} VALUES (?, ?, ?, ?, ?)', (7, 'c', 'g', 1, 3)))
    rows.append(
        (
            'INSERT INTO {index_runs} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
            (3, 'parent', 7, _AT.format(0), 1, 0, b'\x01', b'\x02', b'\x03', b'\x04', _STATE),
        )
    )
    return rows


async def _check_upgrade(kit: StoreKit) -> None:
    store = kit.store
    child = [number for number, _ in _CHILD]
    grandchild = [number for number, _ in _GRANDCHILD]
    assert [s.messages for s in await store.list_snapshots('parent')] == [messages(0, 1, 2, 3), messages(*_PARENT)]
    assert [s.messages for s in await store.list_snapshots('child')] == [messages(*child)]
    [*_, interrupted] = await store.list_snapshots('child', include_interrupted=True)
    assert (interrupted.messages, interrupted.seqs) == (messages(*child[1:]), list(range(1, 8)))
    latest = await store.latest_snapshot('grandchild')
    assert latest is not None and (latest.messages, latest.seqs) == (messages(*grandchild), list(range(5)))
    assert await store.read_messages('child', range(10)) == dict(enumerate(messages(*child)))
    assert await store.read_logs({'grandchild': [0, 3, 9], 'child': [4, 6]}) == {
        'grandchild': {0: message(10), 3: message(15)},
        'child': {4: message(0), 6: message(6)},
    }

    # The reference rows are ranges now, and every message row holds a body.
    assert await ref_ranges(kit, 'child') == [(1, 3, 'parent', 1), (4, 1, 'parent', 0), (6, 2, 'parent', 6)]
    assert await ref_ranges(kit, 'grandchild') == [(0, 1, 'child', 0), (1, 2, 'parent', 1), (3, 1, 'child', 5)]
    assert await kit.query('SELECT COUNT(*) FROM {messages}') == [(8 + 2 + 1,)]
    assert [kind for kind, _, _ in await log_entries(kit, 'grandchild')] == ['ref'] * 4 + ['compressed']

    # Version 6 rebuilds the index (its arrays and fold state are packed anew): every run with
    # snapshots is pending again, and the next catch-up indexes them.
    storage = store.index_storage()
    assert await storage.load_runs(['parent', 'child']) == {}
    assert sorted((await storage.status('c', all_scopes=False)).pending) == ['child', 'grandchild', 'parent']

    # A new run builds on the upgraded references, and deleting the conversation takes everything.
    await store.register_run(registration('next', conversation_id='c'))
    assert await store.save_snapshot(based('next', 'grandchild', 0, [(1, 5), (-1, 1)], [30]))
    assert await ref_ranges(kit, 'next') == [(0, 4, 'grandchild', 1)]
    assert [s.messages for s in await store.list_snapshots('next')] == [messages(*grandchild[1:], 30)]
    assert await store.delete_conversation('c') == 4
    assert await kit.query('SELECT COUNT(*) FROM {messages}') == [(0,)]
    assert await kit.query('SELECT COUNT(*) FROM {message_refs}') == [(0,)]


async def test_a_version_4_sqlite_file_reads_back_the_same(tmp_path: Path) -> None:
    path = tmp_path / 'v4.db'
    names = {name: f'dr_{name}' for name in TABLES}
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(SQLITE_META)
        for statement in (statement for migration in SQLITE_MIGRATIONS[:4] for statement in migration):
            conn.execute(statement)
        conn.execute("INSERT INTO dr_meta VALUES ('schema_version', '4')")
        for statement, params in _v4_rows('sqlite'):
            conn.execute(statement.format(**names), params)

    kit = StoreKit('sqlite', SqliteStepStore(path), sqlite_path=path)
    try:
        await _check_upgrade(kit)
    finally:
        await kit.store.aclose()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM dr_meta WHERE key = 'schema_version'").fetchall() == [
            (str(SCHEMA_VERSION),)
        ]
        # The log names runs by number from schema version 13 on.
        assert [row[1] for row in conn.execute('PRAGMA table_info(dr_messages)')] == ['run_no', 'seq', 'body']
    assert SCHEMA_VERSION == 15


@pytest.mark.postgres
async def test_a_version_4_postgres_schema_reads_back_the_same(postgres_url: str, postgres_schema: str) -> None:
    import psycopg

    names = {name: f'"{postgres_schema}".dr_{name}' for name in TABLES}
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        for statement in (
            POSTGRES_META,
            *(statement for migration in POSTGRES_MIGRATIONS[:4] for statement in migration),
        ):
            await conn.execute(statement.format(**names).encode())
        await conn.execute(f"INSERT INTO {names['meta']} VALUES ('schema_version', '4')".encode())
        for statement, params in _v4_rows('postgres'):
            await conn.execute(statement.format(**names).replace('?', '%s').encode(), params)

    store = PostgresStepStore(postgres_url, schema=postgres_schema)
    kit = StoreKit('postgres', store, postgres_url=postgres_url, postgres_schema=postgres_schema)
    try:
        await _check_upgrade(kit)
    finally:
        await store.aclose()
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT value FROM {names['meta']} WHERE key = 'schema_version'".encode())
        assert await cur.fetchall() == [(str(SCHEMA_VERSION),)]
        cur = await conn.execute(
            'SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s'
            " AND table_name IN ('dr_messages', 'dr_index_runs') AND column_name IN ('ref_run_id', 'ref_seq', 'state')",
            (postgres_schema,),
        )
        assert await cur.fetchall() == [('state', 'bytea')]
