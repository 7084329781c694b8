"""A log entry lost from the middle of a run's log is named by a read by number, on both stores.

A run's log numbers follow on from 0 (a save appends), so an entry asked for that is absent while
a later one is found was lost (or, on SQLite, its key is stored as another type and matches no
lookup). Reads by number used to leave such an entry out, as they leave out numbers past the log;
now the read raises `CorruptSnapshotError` naming the entry. An entry lost from the very end
cannot be told from a number past the log by a read by number: the snapshots that name it do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from pathlib import Path

import psycopg
import pytest

from durable_recall import PostgresStepStore, SqliteStepStore
from durable_recall.base import CorruptSnapshotError
from durable_recall.stores import StepStore

from ._corpus import populate

pytestmark = pytest.mark.anyio

Delete = Callable[[str, int], None]


@pytest.fixture(params=['sqlite', 'postgres'])
async def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[StepStore, Delete]]:
    """A populated store, and how to delete one message row (`run_id`, `seq`) behind its back."""
    if request.param == 'sqlite':
        path = tmp_path / 'store.db'
        store: StepStore = SqliteStepStore(path)

        def delete(run_id: str, seq: int) -> None:
            with closing(sqlite3.connect(path)) as conn, conn:
                conn.execute(
                    'DELETE FROM dr_messages WHERE run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?) AND seq = ?',
                    (run_id, seq),
                )

    else:
        url: str = request.getfixturevalue('postgres_url')
        schema: str = request.getfixturevalue('postgres_schema')
        store = PostgresStepStore(url, schema=schema)

        def delete(run_id: str, seq: int) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                query = f'DELETE FROM "{schema}".dr_messages WHERE run_id = %s AND seq = %s'
                conn.execute(query.encode(), (run_id, seq))

    try:
        await populate(store)
        yield store, delete
    finally:
        await store.aclose()


async def test_a_hole_in_a_log_read_by_number_is_named(damaged: tuple[StepStore, Delete]) -> None:
    store, delete = damaged
    whole = await store.read_messages('run-1', range(40))
    assert sorted(whole) == list(range(10))
    delete('run-1', 2)
    with pytest.raises(CorruptSnapshotError, match='message 2 of the run log is missing'):
        await store.read_messages('run-1', range(40))
    with pytest.raises(CorruptSnapshotError, match='message 2 of the run log is missing'):
        await store.read_logs({'run-1': [1, 2, 3]})
    # Asked alone, the lost entry cannot be told from a number past the log; the read below it stays whole.
    assert await store.read_messages('run-1', [2]) == {}
    assert sorted(await store.read_messages('run-1', [0, 1])) == [0, 1]


async def test_a_hole_in_an_inherited_range_is_named(damaged: tuple[StepStore, Delete]) -> None:
    """run-2 inherits run-1's first ten entries by reference: a body lost there is a hole in run-2's log too."""
    store, delete = damaged
    delete('run-1', 4)
    with pytest.raises(CorruptSnapshotError, match='message 4 of the run log is missing'):
        await store.read_messages('run-2', range(40))
