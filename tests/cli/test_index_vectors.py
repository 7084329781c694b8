"""`index --ranking hybrid` and `index --embedder MODEL`: vectors at index time, for hybrid searches.

The embedder is pydantic-ai's own `Embedder`, made from the name on the command line; the name
`test:concepts` resolves (through pydantic-ai's model inference, patched by `conftest`'s `models`
fixture) to the hybrid tests' keyword model, whose calls are counted: after the command, a hybrid
search through the library with the same model asks it for the query's vector and for no message's.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from pydantic_ai.embeddings import Embedder

from durable_recall.search import SearchRequest

from ..hybrid._kit import ConceptEmbeddingModel, needs_numpy, needs_semantic
from ._semantic import LOCAL_MODEL, missing_extra_error, run_without_semantic
from ._support import SUPPORT, Populated, run_cli
from .test_errors import assert_one_line_error
from .test_index import fresh_copy, pending
from .test_search import tool_answer

pytestmark = needs_numpy


def vectors(store: str, model: str = 'test:concepts:6') -> int:
    with closing(sqlite3.connect(store)) as conn:
        return conn.execute('SELECT COUNT(*) FROM dr_vectors WHERE model = ?', (model,)).fetchone()[0]


@pytest.fixture
def store(populated: Populated, tmp_path: Path) -> str:
    """A copy of the populated store whose index was never built (`fresh_copy`): each test indexes its own."""
    return fresh_copy(populated, tmp_path)


def test_embedder_embeds_so_that_a_hybrid_search_embeds_only_its_query(
    populated: Populated,
    store: str,
    capsys: pytest.CaptureFixture[str],
    models: dict[str, ConceptEmbeddingModel],
) -> None:
    argv = ['index', '--store', store, '--conversation', SUPPORT, '--embedder', 'test:concepts']
    first = run_cli(capsys, [*argv, '--json'])
    assert (first.status, first.err) == (0, ''), first.err
    report = json.loads(first.out)
    indexing = models['concepts']
    assert report['runs_caught_up'] == len(populated.support_runs)
    assert report['embedder'] == 'test:concepts'
    assert report['embedded'] == len(indexing.documents) > 0
    assert len(indexing.queries) == 1  # one probe query: the model's name and dimensions
    assert vectors(store) == len(populated.support_runs)

    searching = ConceptEmbeddingModel('concepts')  # another process's embedder of the same model
    answer = tool_answer(
        store,
        SearchRequest(query='billing export'),
        scope='conversation',
        conversation_id=SUPPORT,
        ranking='hybrid',
        embedder=Embedder(searching),
    )
    assert 'billing' in answer
    assert (searching.documents, searching.queries) == ([], ['billing export'])

    again = run_cli(capsys, argv)
    assert again.status == 0
    assert again.out.splitlines()[1] == f'{store}: no message needed embedding: each has a vector from test:concepts'
    assert models['concepts'].documents == []

    rest = run_cli(capsys, ['index', '--store', store, '--all', '--embedder', 'test:concepts'])
    assert rest.status == 0
    others = len(models['concepts'].documents)
    assert others > 0  # the other conversations' messages, and only theirs
    assert set(models['concepts'].documents).isdisjoint(indexing.documents)
    assert rest.out.splitlines()[1].startswith(f'{store}: embedded {others} messages with test:concepts in ')


def test_bm25_alone_reports_no_embedding(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, ['index', '--store', store, '--all', '--json'])
    report = json.loads(result.out)
    assert (report['embedder'], report['embedded'], report['embedding_seconds']) == (None, None, None)
    assert vectors(store) == 0


def test_a_name_pydantic_ai_cannot_use_is_refused_before_indexing(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting = pending(store)
    result = run_cli(capsys, ['index', '--store', store, '--all', '--embedder', 'text-embedding-3-small'])
    assert_one_line_error(
        result,
        "--embedder 'text-embedding-3-small': You must provide a provider prefix",
        'such as openai:text-embedding-3-small',
    )
    assert pending(store) == waiting


def test_a_failing_embedder_is_one_line_and_the_index_is_caught_up(
    store: str,
    capsys: pytest.CaptureFixture[str],
    models: dict[str, ConceptEmbeddingModel],
) -> None:
    result = run_cli(capsys, ['index', '--store', store, '--all', '--embedder', 'test:down'])
    assert_one_line_error(
        result,
        'embedding with test:down failed (ConnectionError: the embedding service is down)',
        'the search index is caught up',
    )
    assert pending(store) == 0


def test_embedder_with_bm25_is_a_usage_error(populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ['index', '--store', populated.store, '--all', '--ranking', 'bm25', '--embedder', 'test:concepts']
    assert_one_line_error(run_cli(capsys, argv), '--embedder implies --ranking hybrid', status=2)


def test_hybrid_without_the_semantic_extra_is_one_line(store: str) -> None:
    waiting = pending(store)
    result = run_without_semantic(['index', '--store', store, '--all', '--ranking', 'hybrid'])
    assert (result.returncode, result.stdout) == (1, '')
    assert result.stderr == missing_extra_error('or embed with --embedder PROVIDER:MODEL')
    assert pending(store) == waiting, 'refused before anything was indexed'


@needs_semantic
def test_hybrid_embeds_with_the_local_default(
    populated: Populated, store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one test here that loads the local model (shared with `test_search_hybrid` in one process)."""
    result = run_cli(capsys, ['index', '--store', store, '--conversation', SUPPORT, '--ranking', 'hybrid'])
    assert (result.status, result.err) == (0, '')
    line = result.out.splitlines()[1]
    assert line.startswith(f'{store}: embedded ') and ' messages with all-MiniLM-L6-v2 in ' in line
    assert vectors(store, LOCAL_MODEL) == len(populated.support_runs)
    again = run_cli(capsys, ['index', '--store', store, '--conversation', SUPPORT, '--ranking', 'hybrid'])
    assert again.out.splitlines()[1] == f'{store}: no message needed embedding: each has a vector from all-MiniLM-L6-v2'
