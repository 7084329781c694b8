"""Conversation-store fixtures: one behaviour suite over core's in-memory store and ours.

`conversation_kit` runs a test against `InMemoryConversationStore` (the semantic reference),
`SqliteConversationStore` and `PostgresConversationStore` (a fresh schema per test), so ours
provably behave like core's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.conversation_store import ConversationStore, InMemoryConversationStore

from durable_recall.conversations import PostgresConversationStore, SqliteConversationStore

from ._index_kit import CountingPostgres, CountingSqlite, Kit

TABLES = (
    'meta',
    'records',
    'branches',
    'entries',
    'runs',
    'index_conversations',
    'pending',
    'index_scopes',
    'index_runs',
    'index_postings',
    'index_hashes',
)
"""Every table of conversation schema version 2, by placeholder name (each is `drc_<name>`)."""


@dataclass
class ConversationKit:
    """A store under test, a way to open another store on the same database, and raw SQL for the SQL ones."""

    backend: str
    store: ConversationStore
    reopen: Callable[[], ConversationStore]
    sqlite_path: Path | None = None
    postgres_url: str | None = None
    postgres_schema: str | None = None

    async def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Run SQL against the store's tables: `{records}`-style names, `?` placeholders."""
        names = {name: f'drc_{name}' for name in TABLES}
        if self.sqlite_path is not None:
            with closing(sqlite3.connect(self.sqlite_path, isolation_level=None)) as conn:
                return conn.execute(sql.format(**names), params).fetchall()
        if self.postgres_url is not None:
            import psycopg

            names = {key: f'"{self.postgres_schema}".{table}' for key, table in names.items()}
            async with await psycopg.AsyncConnection.connect(self.postgres_url, autocommit=True) as conn:
                cur = await conn.execute(sql.format(**names).replace('?', '%s').encode(), params)
                return await cur.fetchall() if cur.description else []
        raise NotImplementedError(f'{self.backend} has no SQL')


def _make(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> ConversationKit:
    if backend == 'memory':
        store = InMemoryConversationStore()
        return ConversationKit(backend, store, lambda: store)
    if backend == 'sqlite':
        path = tmp_path / 'conversations.db'
        return ConversationKit(
            backend, SqliteConversationStore(database=path), lambda: SqliteConversationStore(database=path), path
        )
    url: str = request.getfixturevalue('postgres_url')
    schema: str = request.getfixturevalue('postgres_schema')
    return ConversationKit(
        backend,
        PostgresConversationStore(url, schema=schema),
        lambda: PostgresConversationStore(url, schema=schema),
        postgres_url=url,
        postgres_schema=schema,
    )


async def close_store(store: ConversationStore) -> None:
    """Close a SQL store's connection or pool; core's in-memory store has none."""
    if isinstance(store, SqliteConversationStore | PostgresConversationStore):
        await store.aclose()


@pytest.fixture(params=['memory', 'sqlite', pytest.param('postgres', marks=pytest.mark.postgres)])
async def conversation_kit(
    request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str
) -> AsyncIterator[ConversationKit]:
    made = _make(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await close_store(made.store)


@pytest.fixture
def conversation_store(conversation_kit: ConversationKit) -> ConversationStore:
    return conversation_kit.store


@pytest.fixture(params=['sqlite', pytest.param('postgres', marks=pytest.mark.postgres)])
async def sql_conversation_kit(
    request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str
) -> AsyncIterator[ConversationKit]:
    """The SQL backends only, for tests that look at or tamper with rows, or use two processes."""
    made = _make(request.param, request, tmp_path)
    try:
        yield made
    finally:
        await close_store(made.store)


@pytest.fixture(params=['sqlite', pytest.param('postgres', marks=pytest.mark.postgres)])
async def index_kit(request: pytest.FixtureRequest, tmp_path: Path, anyio_backend: str) -> AsyncIterator[Kit]:
    """The SQL backends as cold processes: each `open()` a new counting store on one database (`_index_kit`)."""
    if request.param == 'sqlite':
        path = tmp_path / 'conversations.db'
        made = Kit(lambda: CountingSqlite(path), path)
    else:
        url: str = request.getfixturevalue('postgres_url')
        schema: str = request.getfixturevalue('postgres_schema')
        made = Kit(lambda: CountingPostgres(url, schema=schema), None)
    try:
        yield made
    finally:
        for store in made.opened:
            await store.aclose()
