"""Store fixtures over every backend (`kit`, `store`, `sql_kit`), plus a look inside each backend's storage.

A plugin rather than a conftest so that every test directory can run against all stores.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from durable_recall.stores import InMemoryStepStore, PostgresStepStore, SqliteStepStore, StepStore
from durable_recall.stores.postgres._connect import TABLES

SQLITE_LOG_RUN = {
    'of_run': 'run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?)',
    'ref_run': '(SELECT run_id FROM dr_runs WHERE run_no = ref_run_no)',
    'in_conversation': 'run_no IN (SELECT run_no FROM dr_runs WHERE conversation_id = ?)',
}
"""`{of_run}` and `{ref_run}` in SQL on a SQLite file (see `StoreKit.query`)."""


@dataclass
class StoreKit:
    """A store under test and a backend-specific look at what it physically holds."""

    backend: str
    store: StepStore
    sqlite_path: Path | None = None
    postgres_url: str | None = None
    postgres_schema: str | None = None

    async def log_size(self, run_id: str) -> int:
        """How many entries the run's log holds: bodies of its own, and references to other runs' entries."""
        if isinstance(self.store, InMemoryStepStore):
            return len(self.store._runs[run_id].log)
        (count,) = (
            await self.query(
                'SELECT (SELECT COUNT(*) FROM {messages} WHERE {of_run})'
                ' + (SELECT COALESCE(SUM(count), 0) FROM {message_refs} WHERE {of_run})',
                run_id,
                run_id,
            )
        )[0]
        return count

    async def stored_ranges(self, run_id: str) -> list[list[tuple[int, int]]]:
        """Each stored snapshot's log ranges, in index order."""
        if isinstance(self.store, InMemoryStepStore):
            return [list(stored.ranges) for stored in self.store._runs[run_id].snapshots]
        import json

        rows = await self.query('SELECT ranges FROM {snapshots} WHERE run_id = ? ORDER BY idx', run_id)
        return [[(first, end) for first, end in json.loads(text)] for (text,) in rows]

    async def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run SQL against the store's tables; `{runs}`-style names, `?` placeholders.

        The message log's tables name their run by number on SQLite (schema version 13) and by id
        on Postgres: `{of_run}` is the condition "the row is the run's whose id is bound here" and
        `{ref_run}` the id of the run a reference range names, and `{in_conversation}` "the row is of
        a run of the conversation bound here", in either.
        """
        names = {name: f'dr_{name}' for name in TABLES}
        if self.sqlite_path is not None:
            names |= SQLITE_LOG_RUN
            with closing(sqlite3.connect(self.sqlite_path, isolation_level=None)) as conn:
                return conn.execute(sql.format(**names), params).fetchall()
        if self.postgres_url is not None:
            import psycopg

            names = {key: f'"{self.postgres_schema}".{table}' for key, table in names.items()}
            names |= {
                'of_run': 'run_id = ?',
                'ref_run': 'ref_run_id',
                'in_conversation': f'run_id IN (SELECT run_id FROM {names["runs"]} WHERE conversation_id = ?)',
            }
            async with await psycopg.AsyncConnection.connect(self.postgres_url, autocommit=True) as conn:
                cur = await conn.execute(sql.format(**names).replace('?', '%s').encode(), params)
                return await cur.fetchall() if cur.description else []
        raise NotImplementedError(f'{self.backend} has no SQL')


def _make_kit(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> StoreKit:
    if backend == 'memory':
        return StoreKit(backend, InMemoryStepStore())
    if backend == 'sqlite':
        path = tmp_path / 'store.db'
        return StoreKit(backend, SqliteStepStore(path), sqlite_path=path)
    url: str = request.getfixturevalue('postgres_url')
    schema: str = request.getfixturevalue('postgres_schema')
    return StoreKit(backend, PostgresStepStore(url, schema=schema), postgres_url=url, postgres_schema=schema)


@pytest.fixture(params=['memory', 'sqlite', pytest.param('postgres', marks=pytest.mark.postgres)])
async def kit(request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str) -> AsyncIterator[StoreKit]:
    made = _make_kit(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await made.store.aclose()


@pytest.fixture
def store(kit: StoreKit) -> StepStore:
    return kit.store


@pytest.fixture(params=['sqlite', pytest.param('postgres', marks=pytest.mark.postgres)])
async def sql_kit(request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str) -> AsyncIterator[StoreKit]:
    """The SQL backends only, for tests that tamper with rows."""
    made = _make_kit(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await made.store.aclose()
