"""`open_store`: one string names a store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from durable_recall.base import _errors
from durable_recall.stores import InMemoryStepStore, PostgresStepStore, SqliteStepStore, open_store

pytestmark = pytest.mark.anyio


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize('url', ['memory:', 'memory://'])
def test_memory(url: str) -> None:
    assert isinstance(open_store(url), InMemoryStepStore)


@pytest.mark.parametrize(
    ('url', 'relative'),
    [
        ('sqlite:///relative.db', 'relative.db'),
        ('sqlite:///nested/dir.sqlite', 'nested/dir.sqlite'),
        ('plain.db', 'plain.db'),
        ('plain.sqlite3', 'plain.sqlite3'),
        ('./dotted.SQLITE', 'dotted.SQLITE'),
    ],
)
async def test_relative_sqlite(in_tmp: Path, url: str, relative: str) -> None:
    (in_tmp / 'nested').mkdir()

    store = open_store(url)

    assert isinstance(store, SqliteStepStore)
    assert (in_tmp / relative).exists()
    await store.aclose()


async def test_absolute_sqlite(tmp_path: Path) -> None:
    path = tmp_path / 'abs.db'
    assert path.is_absolute()

    for url in (f'sqlite:///{path}', str(path)):
        store = open_store(url)
        assert isinstance(store, SqliteStepStore)
        assert repr(store) == f'SqliteStepStore({str(path)!r})'
        await store.aclose()
    assert path.exists()


@pytest.mark.parametrize('url', ['postgresql://user:pw@127.0.0.1:5432/test', 'postgres://127.0.0.1/test'])
def test_postgres_connects_lazily(url: str) -> None:
    store = open_store(url)

    assert isinstance(store, PostgresStepStore)
    assert 'pw' not in repr(store)


@pytest.mark.parametrize(
    ('url', 'error'),
    [
        ('redis://localhost', "scheme 'redis' is not supported"),
        ('mysql://localhost/db', "scheme 'mysql' is not supported"),
        ('notes.txt', 'is not a store URL'),
        ('sqlite://', 'names no SQLite file'),
        ('sqlite:///', 'names no SQLite file'),
        ('postgresql://host:notaport/db', 'not a usable Postgres URL'),
    ],
)
def test_unsupported_or_malformed(url: str, error: str) -> None:
    with pytest.raises(_errors.StoreConfigurationError, match=error) as caught:
        open_store(url)

    if 'not supported' in error or 'not a store URL' in error:
        for supported in ('sqlite:///', 'postgresql://', 'memory:', '.db'):
            assert supported in caught.value.message


def test_an_unwritable_sqlite_url(tmp_path: Path) -> None:
    (tmp_path / 'file').write_text('')

    with pytest.raises(_errors.StoreConfigurationError, match=os.fspath(tmp_path / 'file' / 'x.db')):
        open_store(f'sqlite:///{tmp_path}/file/x.db')
