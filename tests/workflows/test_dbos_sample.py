"""The DBOS sample (`workflows/dbos/app.py`), run as its README runs it: a process of its own.

A subprocess because DBOS is a process-wide singleton that the app launches and destroys itself,
and so that the defaults (SQLite files in the working directory) are exercised as they are.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from workflows.conversation import DETAIL, STORE_VARIABLE, TURNS

from durable_recall import PostgresStepStore, SqliteStepStore

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_app(cwd: Path, *args: str) -> str:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)])}
    env.pop(STORE_VARIABLE, None)
    done = subprocess.run(
        [sys.executable, '-m', 'workflows.dbos.app', *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def last_reply(output: str) -> str:
    replies = [line for line in output.splitlines() if line.startswith('assistant: ')]
    assert len(replies) == len(TURNS), output
    return replies[-1]


async def test_defaults_sqlite(tmp_path: Path) -> None:
    conversation_id = f'sample-{uuid.uuid4().hex[:8]}'
    output = run_app(tmp_path, '--conversation-id', conversation_id)
    assert DETAIL in last_reply(output), 'the last turn recalls what compaction dropped turns ago'
    assert (tmp_path / 'durable-recall-sample-dbos.db').is_file(), 'the DBOS system database'
    store = SqliteStepStore(tmp_path / 'durable-recall-sample.db')
    try:
        assert len(await store.list_runs(conversation_id=conversation_id)) == len(TURNS)
    finally:
        await store.aclose()


async def test_postgres_flag(tmp_path: Path, postgres_database_url: str) -> None:
    conversation_id = f'sample-pg-{uuid.uuid4().hex[:8]}'
    output = run_app(tmp_path, '--postgres', postgres_database_url, '--conversation-id', conversation_id)
    assert DETAIL in last_reply(output)
    assert not list(tmp_path.iterdir()), 'with --postgres nothing is written to the working directory'
    store = PostgresStepStore(postgres_database_url)
    try:
        assert len(await store.list_runs(conversation_id=conversation_id)) == len(TURNS)
    finally:
        await store.aclose()
