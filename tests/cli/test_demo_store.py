"""`demo --store`: a foreign SQLite database is refused (as inspect commands refuse it); a new or empty one is fine."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from ._support import run_cli


def tables(path: Path) -> set[str]:
    with closing(sqlite3.connect(path)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_foreign_database_is_refused_and_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / 'other.db'
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute('CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)')
    result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(other)])
    assert result.status == 1 and result.out == ''
    assert result.err.startswith(f'durable-recall: error: {other} is not a durable-recall store')
    assert 'users' in result.err
    assert tables(other) == {'users'}
    # The inspect commands refuse the same file.
    assert run_cli(capsys, ['runs', '--store', str(other), '--all']).status == 1


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / 'notes.db'
    notes.write_text('just some notes, not a database\n' * 100)
    result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(notes)])
    assert result.status == 1 and 'cannot read' in result.err
    assert notes.read_text().startswith('just some notes')


def test_an_empty_file_becomes_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / 'empty.db'
    empty.touch()
    result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(empty), '--json'])
    assert result.status == 0, result.err
    assert 'dr_meta' in tables(empty)
    # A second demo on the store it made is welcome.
    assert run_cli(capsys, ['demo', '--engine', 'none', '--store', str(empty), '--json']).status == 0
