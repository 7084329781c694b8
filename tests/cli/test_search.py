"""`search`: the tool's answer from a terminal, its scope rules, and its matches as JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RunUsage

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore
from durable_recall.search import SearchRequest, SearchScope

from ._support import DETAIL, OTHER, OTHER_SECRET, SUPPORT, Populated, as_shown_by_cli, run_cli


def tool_answer(
    store_path: str, request: SearchRequest, *, scope: SearchScope, conversation_id: str | None, **options: Any
) -> str:
    """What `search_conversation_history` answers a run of `conversation_id` on this store."""

    async def ask() -> str:
        store = SqliteStepStore(Path(store_path))
        try:
            tool = ConversationSearch(SnapshotHistorySource(store), scope=scope, **options)
            ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=conversation_id)
            return await tool.search(ctx, request)
        finally:
            await store.aclose()

    return asyncio.run(ask())


class TestSameAnswerAsTheTool:
    @pytest.mark.parametrize(
        ('args', 'request_', 'options'),
        [
            (['billing', 'export', 's3'], SearchRequest(query='billing export s3'), {}),
            (['vpc endpoint'], SearchRequest(query='vpc endpoint'), {'max_matches': 1, 'context_lines': 0}),
            (['export', '--role', 'user'], SearchRequest(query='export', roles=['user']), {}),
            (['export', '--order', 'newest'], SearchRequest(query='export', order='newest'), {}),
            (['nothing-like-this'], SearchRequest(query='nothing-like-this'), {}),
            (['what', 'was', 'the', 'export', '--every-word'], SearchRequest(query='what was the export'), {}),
            (['export', '--bm25-alone'], SearchRequest(query='export'), {}),
        ],
    )
    def test_conversation_scope(
        self,
        populated: Populated,
        capsys: pytest.CaptureFixture[str],
        args: list[str],
        request_: SearchRequest,
        options: dict[str, Any],
    ) -> None:
        flags = [f'--{name.replace("_", "-")}={value}' for name, value in options.items()]
        result = run_cli(capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, *args, *flags])
        assert result.status == 0 and result.err == ''
        if '--every-word' in args:  # the tool's stopwords=(), which answers otherwise than its default
            default = tool_answer(populated.store, request_, scope='conversation', conversation_id=SUPPORT)
            assert default.partition('\n')[2] + '\n' != result.out.partition('\n')[2]
            options = {**options, 'stopwords': ()}
        if '--bm25-alone' in args:  # the tool's neighbour_weights=(), which answers otherwise than its default
            default = tool_answer(populated.store, request_, scope='conversation', conversation_id=SUPPORT)
            assert default.partition('\n')[2] + '\n' != result.out.partition('\n')[2]
            options = {**options, 'neighbour_weights': ()}
        expected = tool_answer(populated.store, request_, scope='conversation', conversation_id=SUPPORT, **options)
        assert result.out == as_shown_by_cli(expected, result.out) + '\n'

    def test_the_detail_comes_back_verbatim(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, 'billing export s3'])
        blocks = result.out.split('\n\n---\n\n')
        # Stemmed, `exports` in a later reply matches too; the first prompt is a match or its context.
        assert DETAIL in blocks[0]
        said = f'[0] User: Hi! Our nightly billing export has failed three nights in a row. It writes to {DETAIL}'
        assert said in result.out

    def test_all_and_run_id(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        everywhere = run_cli(capsys, ['search', '--store', populated.store, '--all', 'ZEBRA', 'vault'])
        expected = tool_answer(populated.store, SearchRequest(query='ZEBRA vault'), scope='all', conversation_id=None)
        assert everywhere.out == as_shown_by_cli(expected, everywhere.out) + '\n'
        one_run = populated.support_runs[3]
        in_run = run_cli(
            capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, '--run', one_run, 'vpc']
        )
        expected = tool_answer(
            populated.store, SearchRequest(query='vpc', run_id=one_run), scope='conversation', conversation_id=SUPPORT
        )
        assert in_run.out == as_shown_by_cli(expected, in_run.out) + '\n'
        shown = one_run if len(one_run) <= 12 else '…' + one_run[-8:]  # answers show a long id by its end
        assert all(f'run: {shown}' in line for line in in_run.out.splitlines() if line.startswith('[score'))


class TestScope:
    def test_a_conversation_never_sees_another(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        mine = run_cli(capsys, ['search', '--store', populated.store, '--conversation', OTHER, 'ZEBRA vault'])
        assert OTHER_SECRET in mine.out
        theirs = run_cli(capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, 'ZEBRA vault'])
        assert OTHER_SECRET not in theirs.out
        assert theirs.out.startswith("No matches for 'ZEBRA vault' in ")
        everywhere = run_cli(capsys, ['search', '--store', populated.store, '--all', 'ZEBRA vault'])
        assert OTHER_SECRET in everywhere.out


class TestJson:
    def test_shape_and_agreement_with_the_answer(
        self, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        result = run_cli(
            capsys,
            ['search', '--store', populated.store, '--all', 'billing export', '--json', '--context-lines', '1'],
        )
        assert result.status == 0
        document = json.loads(result.out)
        assert set(document) == {
            'store',
            'query',
            'scope',
            'conversation_id',
            'run_id',
            'roles',
            'since',
            'until',
            'order',
            'max_matches',
            'context_lines',
            'ranking',
            'hybrid_weight',
            'embedder',
            'answer',
            'total_matches',
            'shown_matches',
            'matches',
        }
        assert (document['query'], document['scope'], document['conversation_id']) == ('billing export', 'all', None)
        text = run_cli(
            capsys, ['search', '--store', populated.store, '--all', 'billing export', '--context-lines', '1']
        )
        assert document['answer'] + '\n' == text.out
        matches = document['matches']
        assert matches and all(
            set(match) == {'run_id', 'conversation_id', 'position', 'score', 'role', 'timestamp', 'lines', 'message'}
            for match in matches
        )
        # Each match is a line the answer marks `>`, under its run's (shortened) id; the best comes first.
        marked = [line for line in document['answer'].splitlines() if line.startswith('>[')]
        assert sorted(marked) == sorted(f'>[{match["position"]}] {match["lines"][0]}' for match in matches)
        for match in matches:
            run = match['run_id']
            assert f'run: {run if len(run) <= 12 else "…" + run[-8:]}' in document['answer']
        assert matches[0]['score'] == max(m['score'] for m in matches)

    def test_filters_and_order(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        base = ['search', '--store', populated.store, '--conversation', SUPPORT, 'export job', '--json']
        users = json.loads(run_cli(capsys, [*base, '--role', 'user']).out)
        assert users['roles'] == ['user'] and users['matches']
        assert {match['role'] for match in users['matches']} == {'user'}
        newest = json.loads(run_cli(capsys, [*base, '--order', 'newest']).out)['matches']
        assert [m['timestamp'] for m in newest] == sorted((m['timestamp'] for m in newest), reverse=True)

    def test_progress_on_stderr(self, populated: Populated, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        from .test_index import fresh_copy

        store = fresh_copy(populated, tmp_path)  # nothing indexed: the search catches every run up
        result = run_cli(capsys, ['search', '--store', store, '--all', 'export', '--progress'])
        assert result.status == 0
        assert result.err.endswith('9/9\n') and result.err.startswith('\rindexing runs [')
