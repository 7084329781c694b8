from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest

from durable_recall import SqliteStepStore
from durable_recall.cli import main
from tests.cli._support import Populated, populate_sync

if importlib.util.find_spec('mcp') is None:  # the serve extra is part of dev: only a bare install lacks it
    pytest.skip('the serve extra is not installed', allow_module_level=True)


@pytest.fixture(scope='session')
def served_store(tmp_path_factory: pytest.TempPathFactory) -> Populated:
    """A SQLite store real agents populated, with its search index caught up (so serving it writes nothing)."""
    path = tmp_path_factory.mktemp('serve') / 'sessions.db'
    populated = replace(populate_sync(SqliteStepStore(path)), store=str(path))
    assert main(['index', '--store', str(path), '--all']) == 0
    return populated
