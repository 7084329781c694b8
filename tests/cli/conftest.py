from __future__ import annotations

from dataclasses import replace

import pytest

from durable_recall import SqliteStepStore

from ._support import Populated, populate_sync


@pytest.fixture(autouse=True)
def no_store_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's default store comes from DURABLE_RECALL_STORE: tests say which store they mean."""
    monkeypatch.delenv('DURABLE_RECALL_STORE', raising=False)


@pytest.fixture(scope='module')
def populated(tmp_path_factory: pytest.TempPathFactory) -> Populated:
    """A SQLite store that real agents populated (see `populate`); the tests only read it."""
    path = tmp_path_factory.mktemp('cli') / 'sessions.db'
    return replace(populate_sync(SqliteStepStore(path)), store=str(path))
