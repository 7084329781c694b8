"""`search --ranking hybrid`: the tool's hybrid answer with the local default, and its usage and extra errors."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall.search import SearchRequest

from ..hybrid._kit import needs_semantic
from ._semantic import LOCAL_MODEL, missing_extra_error, run_without_semantic
from ._support import SUPPORT, Populated, as_shown_by_cli, run_cli
from .test_search import tool_answer


def copy_of(populated: Populated, tmp_path: Path) -> str:
    """The populated store copied (WAL included): a hybrid search writes vectors, the shared store stays as it is."""
    target = tmp_path / 'hybrid.db'
    with closing(sqlite3.connect(populated.store)) as source, closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
    return str(target)


@needs_semantic
def test_hybrid_is_the_tools_hybrid_answer(
    populated: Populated, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = copy_of(populated, tmp_path)
    base = ['search', '--store', store, '--conversation', SUPPORT, 'nightly invoice upload bucket']
    result = run_cli(capsys, [*base, '--ranking', 'hybrid', '--hybrid-weight', '0.7'])
    assert result.status == 0 and result.err == ''
    expected = tool_answer(
        store,
        SearchRequest(query='nightly invoice upload bucket'),
        scope='conversation',
        conversation_id=SUPPORT,
        ranking='hybrid',
        hybrid_weight=0.7,
    )
    assert result.out == as_shown_by_cli(expected, result.out) + '\n'
    assert result.out != run_cli(capsys, base).out, 'the weight and the vectors changed nothing: not hybrid'
    with closing(sqlite3.connect(store)) as conn:
        (vectors,) = conn.execute('SELECT COUNT(*) FROM dr_vectors WHERE model = ?', (LOCAL_MODEL,)).fetchone()
    assert vectors > 0

    document = json.loads(run_cli(capsys, [*base, '--ranking', 'hybrid', '--json']).out)
    assert (document['ranking'], document['hybrid_weight'], document['embedder']) == ('hybrid', 0.5, 'all-MiniLM-L6-v2')
    bm25 = json.loads(run_cli(capsys, [*base, '--json']).out)
    assert (bm25['ranking'], bm25['hybrid_weight'], bm25['embedder']) == ('bm25', None, None)


@pytest.mark.parametrize(
    ('flags', 'says'),
    [
        (['--hybrid-weight', '0.3'], '--hybrid-weight applies only with --ranking hybrid'),
        (['--ranking', 'hybrid', '--hybrid-weight', '1.5'], "must be between 0 and 1, got '1.5'"),
        (['--ranking', 'hybrid', '--hybrid-weight', 'nan'], "must be between 0 and 1, got 'nan'"),
        (['--ranking', 'semantic'], "invalid choice: 'semantic'"),
    ],
)
def test_ranking_usage_errors(
    populated: Populated, capsys: pytest.CaptureFixture[str], flags: list[str], says: str
) -> None:
    result = run_cli(capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, 'export', *flags])
    assert (result.status, result.out) == (2, '')
    assert result.err.startswith('durable-recall: error: ') and result.err.count('\n') == 1
    assert says in result.err


def test_hybrid_without_the_semantic_extra_is_one_line(populated: Populated) -> None:
    argv = ['search', '--store', populated.store, '--conversation', SUPPORT, 'export', '--ranking', 'hybrid']
    result = run_without_semantic(argv)
    assert (result.returncode, result.stdout) == (1, '')
    assert result.stderr == missing_extra_error('or search with --embedder PROVIDER:MODEL, or with --ranking bm25')
