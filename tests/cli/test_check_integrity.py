"""`check` names a snapshot row whose checksum does not match, and pending runs whose marks do not hold up."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from durable_recall import SqliteStepStore

from ..stores._helpers import delta, messages, registration
from ._support import run_cli


def make_store(tmp_path: Path) -> Path:
    """Run `r` of conversation `c`: snapshot 1 is the log ranges `[[0,2],[3,4]]`."""
    path = tmp_path / 'store.db'

    async def fill() -> None:
        store = SqliteStepStore(path)
        try:
            await store.register_run(registration('r', conversation_id='c'))
            assert await store.save_snapshot(delta('r', 0, [], messages(0, 1, 2)))
            assert await store.save_snapshot(delta('r', 1, messages(0, 1, 2), messages(0, 1, 3)))
        finally:
            await store.aclose()

    anyio.run(fill)
    return path


def sql(path: Path, statement: str) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(statement)


def test_check_names_a_reordered_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_store(tmp_path)
    clean = run_cli(capsys, ['check', '--store', str(path)])
    assert clean.status == 0, clean.out
    sql(path, "UPDATE dr_snapshots SET ranges = '[[3,4],[0,2]]' WHERE run_id = 'r' AND idx = 1")

    run = run_cli(capsys, ['check', '--store', str(path)])

    assert run.status == 1
    assert 'run r snapshot 1: the snapshot row does not match its checksum' in run.out


@pytest.mark.parametrize(
    ('tamper', 'named'),
    [
        (
            "INSERT INTO dr_pending (conversation_id, run_id, upto) VALUES ('c', 'gone', 3)",
            "run gone: a pending mark (conversation 'c') names a run the store does not hold",
        ),
        (
            "UPDATE dr_pending SET conversation_id = 'elsewhere' WHERE run_id = 'r'",
            "run r: its pending mark is filed under conversation 'elsewhere', but the run belongs to 'c'",
        ),
        (
            "UPDATE dr_pending SET upto = 7 WHERE run_id = 'r'",
            'run r: its pending mark says snapshots up to 7 were saved, but the last one stored is 1',
        ),
    ],
)
def test_check_covers_pending_runs(tamper: str, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_store(tmp_path)  # never searched: run r is pending
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute('SELECT conversation_id, run_id, upto FROM dr_pending').fetchall() == [('c', 'r', 1)]
    assert run_cli(capsys, ['check', '--store', str(path)]).status == 0
    sql(path, tamper)

    run = run_cli(capsys, ['check', '--store', str(path)])

    assert run.status == 1
    assert named in run.out
