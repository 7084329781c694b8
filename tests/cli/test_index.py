"""`index`: catch the search index up from the command line."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from ._support import SUPPORT, Populated, as_shown_by_cli, run_cli


def fresh_copy(populated: Populated, tmp_path: Path) -> str:
    """The populated store copied with SQLite's backup API (the WAL included), before any search indexed it."""
    target = tmp_path / 'copy.db'
    with closing(sqlite3.connect(populated.store)) as source, closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
        copy.execute('DELETE FROM dr_index_postings')
        copy.execute('DELETE FROM dr_index_hashes')
        copy.execute('DELETE FROM dr_index_runs')
        copy.execute('DELETE FROM dr_index_scopes')
        copy.execute(
            'INSERT OR REPLACE INTO dr_pending (conversation_id, run_id, upto)'
            " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx) FROM dr_runs r"
            ' JOIN dr_snapshots s ON s.run_id = r.run_id GROUP BY r.run_id'
        )
        copy.commit()
    return str(target)


def test_indexes_one_conversation_then_nothing_is_left(
    populated: Populated, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = fresh_copy(populated, tmp_path)
    first = run_cli(capsys, ['index', '--store', store, '--conversation', SUPPORT, '--json'])
    assert first.status == 0 and first.err == ''
    report = json.loads(first.out)
    assert report['runs_caught_up'] == len(populated.support_runs)
    assert report['unreadable'] == [] and report['documents'] > 0
    again = json.loads(run_cli(capsys, ['index', '--store', store, '--conversation', SUPPORT, '--json']).out)
    assert again['runs_caught_up'] == 0 and again['documents'] == report['documents']


def test_the_whole_store_in_text(populated: Populated, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = fresh_copy(populated, tmp_path)
    result = run_cli(capsys, ['index', '--store', store, '--all'])
    assert result.status == 0
    total = sum(len(runs) for runs in populated.runs.values()) + 1
    assert f'indexed {total} runs of the whole store' in result.out
    assert 'searchable messages' in result.out


def pending(store: str) -> int:
    with closing(sqlite3.connect(store)) as conn:
        return conn.execute('SELECT COUNT(*) FROM dr_pending').fetchone()[0]


@pytest.mark.parametrize('scope', [['--conversation', SUPPORT], ['--all']])
def test_search_catches_the_index_up_and_answers_as_the_tool(
    populated: Populated, tmp_path: Path, capsys: pytest.CaptureFixture[str], scope: list[str]
) -> None:
    """`search` runs the tool's engine: it indexes what is pending in its scope, then answers exactly as the tool."""
    from durable_recall.search import SearchRequest

    from .test_search import tool_answer

    store = fresh_copy(populated, tmp_path)
    assert pending(store) > 0
    result = run_cli(capsys, ['search', '--store', store, *scope, 'billing', 'export', '--progress'])
    assert result.status == 0
    assert 'indexing runs [' in result.err, 'the bar counts the runs the catch-up indexed'
    with closing(sqlite3.connect(store)) as conn:
        left = conn.execute(
            'SELECT COUNT(*) FROM dr_pending WHERE ? OR conversation_id = ?', (scope == ['--all'], SUPPORT)
        ).fetchone()[0]
    assert left == 0
    if scope == ['--all']:
        assert pending(store) == 0
    expected = tool_answer(
        store,
        SearchRequest(query='billing export'),
        scope='all' if scope == ['--all'] else 'conversation',
        conversation_id=None if scope == ['--all'] else SUPPORT,
    )
    assert result.out == as_shown_by_cli(expected, result.out) + '\n'
