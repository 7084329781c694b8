"""`check` after one flipped bit: one problem, in the run whose row holds the body; no `-1` placeholder anywhere."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall import SqliteStepStore

from ._support import SUPPORT, Populated, populate_sync, run_cli


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[str, Populated, int]:
    """A populated store whose first run's first compressed body has one flipped bit (its index caught up before)."""
    path = tmp_path / 'store.db'
    populated = populate_sync(SqliteStepStore(path))
    assert run_cli_status(['index', '--store', str(path), '--all']) == 0
    first = populated.support_runs[0]
    with closing(sqlite3.connect(path)) as conn, conn:
        seq, body = conn.execute(
            'SELECT seq, body FROM dr_messages WHERE run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?)'
            ' AND typeof(body) = ? ORDER BY seq LIMIT 1',
            (first, 'blob'),
        ).fetchone()
        flipped = body[:6] + bytes([body[6] ^ 0x20]) + body[7:]
        conn.execute(
            'UPDATE dr_messages SET body = ? WHERE seq = ? AND run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?)',
            (flipped, seq, first),
        )
    return str(path), populated, seq


def run_cli_status(args: list[str]) -> int:
    from durable_recall.cli import main

    return main(args)


def test_one_flipped_bit_is_one_problem_in_its_run(
    damaged: tuple[str, Populated, int], capsys: pytest.CaptureFixture[str]
) -> None:
    store, populated, seq = damaged
    first = populated.support_runs[0]
    result = run_cli(capsys, ['check', '--store', store, '--json'])
    assert result.status == 1
    report = json.loads(result.out)
    [problem] = report['problems']
    assert problem['run_id'] == first and problem['snapshot'] == 0
    assert f'message {seq} of the run log' in problem['what']
    # The later runs that inherited the body are noted, not counted as damaged.
    assert any('inherited message' in note and first in note for note in report['notes'])

    text = run_cli(capsys, ['check', '--store', store])
    assert text.out.splitlines()[-1].endswith(': 1 problem')
    assert 'problem(s)' not in text.out and 'run(s)' not in text.out
    assert [line for line in text.out.splitlines() if line.startswith('run ')] == [
        line for line in text.out.splitlines() if line.startswith(f'run {first} snapshot 0: ')
    ]


def test_the_search_warning_names_no_snapshot_minus_one(
    damaged: tuple[str, Populated, int], capsys: pytest.CaptureFixture[str]
) -> None:
    store, populated, _ = damaged
    result = run_cli(
        capsys, ['search', '--store', store, '--conversation', SUPPORT, 'service account svc-billing-export']
    )
    assert result.status == 0
    assert 'could not be read' in result.out
    assert f"run '{populated.support_runs[0]}' (message" in result.out
    assert 'snapshot -1' not in result.out and ', snapshot' not in result.out.split('Warning:')[-1]
