"""`conversations`, `runs` and `show` against a store real agents wrote."""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from durable_recall import SqliteStepStore, StepPersistence
from durable_recall.cli import main

from ._support import DETAIL, ORPHAN, OTHER, SUPPORT, Populated, run_cli

RUN_KEYS = {'run_id', 'conversation_id', 'parent_run_id', 'agent_name', 'metadata', 'started_at'}
ISO_UTC = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00$')


class TestConversations:
    def test_lists_each_conversation_with_counts_and_times(
        self, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        result = run_cli(capsys, ['conversations', '--store', populated.store])
        assert result.status == 0 and result.err == ''
        lines = result.out.splitlines()
        assert lines[0].split() == ['CONVERSATION', 'RUNS', 'FIRST', 'STARTED', '(UTC)', 'LAST', 'STARTED', '(UTC)']
        assert lines[1].split()[:2] == [SUPPORT, '6'] and lines[2].split()[:2] == [OTHER, '2']
        assert lines[3].split()[:2] == [populated.solo[0], '1']
        assert '3 conversations, 9 runs in' in result.out
        assert result.out.splitlines()[-1] == '1 run without a conversation id (see `runs --all`)'

    def test_json(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['conversations', '--store', populated.store, '--json'])
        document = json.loads(result.out)
        assert set(document) == {'store', 'conversations', 'runs_without_conversation'}
        assert document['runs_without_conversation'] == 1
        assert [(c['conversation_id'], c['runs']) for c in document['conversations']] == [
            (SUPPORT, 6),
            (OTHER, 2),
            (populated.solo[0], 1),
        ]
        for item in document['conversations']:
            assert set(item) == {'conversation_id', 'runs', 'first_started_at', 'last_started_at'}
            assert ISO_UTC.match(item['first_started_at']) and item['first_started_at'] <= item['last_started_at']


class TestRuns:
    def test_one_conversation(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['runs', '--store', populated.store, '--conversation', SUPPORT, '--wide'])
        assert result.status == 0
        lines = result.out.splitlines()
        assert lines[0].split()[:4] == ['RUN', 'ID', 'AGENT', 'STARTED']
        assert 'CONVERSATION' not in lines[0]
        rows = [line.split() for line in lines[1:7]]
        assert [row[0] for row in rows] == populated.support_runs
        # run id, agent, date, time, snapshots, record messages, last saved date and time
        assert [(row[1], row[4], row[5]) for row in rows] == [
            ('support_demo', '3', '4'),
            ('support_demo', '2', '6'),
            ('support_demo', '2', '8'),
            ('support_demo', '2', '10'),
            ('support_demo', '2', '6'),
            ('support_demo', '3', '10'),
        ]
        assert lines[-1] == '6 runs'

    def test_all_shows_the_conversation_column(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['runs', '--store', populated.store, '--all', '--wide'])
        assert result.status == 0
        assert 'CONVERSATION' in result.out.splitlines()[0]
        assert result.out.splitlines()[-1] == '10 runs'
        orphan = next(line for line in result.out.splitlines() if line.startswith(ORPHAN))
        assert orphan.split()[1:3] == ['-', '-'] and orphan.split()[-3:] == ['0', '0', '-']
        solo = next(line for line in result.out.splitlines() if line.startswith(populated.solo[1]))
        assert solo.split()[1:3] == [populated.solo[0], 'other_agent']

    def test_json(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['runs', '--store', populated.store, '--conversation', OTHER, '--json'])
        document = json.loads(result.out)
        assert set(document) == {'store', 'conversation_id', 'runs'}
        assert document['conversation_id'] == OTHER
        keys = RUN_KEYS | {'snapshots', 'interrupted_snapshots', 'messages', 'last_saved_at', 'error'}
        assert all(set(run) == keys for run in document['runs'])
        assert [run['run_id'] for run in document['runs']] == populated.runs[OTHER]
        first = document['runs'][0]
        assert (first['agent_name'], first['snapshots'], first['interrupted_snapshots'], first['error']) == (
            'other_agent',
            2,
            0,
            None,
        )
        assert ISO_UTC.match(first['started_at']) and ISO_UTC.match(first['last_saved_at'])

    def test_progress_goes_to_stderr(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        quiet = run_cli(capsys, ['runs', '--store', populated.store, '--all', '--json'])
        loud = run_cli(capsys, ['runs', '--store', populated.store, '--all', '--json', '--progress'])
        assert quiet.err == ''  # not a terminal, and not asked
        assert loud.out == quiet.out
        assert loud.err.endswith('reading runs [############################] 10/10\n')


class TestShow:
    def test_the_rebuilt_record_with_positions(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        run_id = populated.support_runs[0]
        result = run_cli(capsys, ['show', '--store', populated.store, run_id])
        assert result.status == 0
        assert result.out.splitlines()[0].split() == ['run', run_id]
        assert 'snapshots     3 complete, 0 interrupted' in result.out
        headers = [line.split()[:2] for line in result.out.splitlines() if line.startswith('[')]
        assert headers == [['[0]', 'user'], ['[1]', 'assistant'], ['[2]', 'tool'], ['[3]', 'assistant']]
        assert DETAIL in result.out
        assert 'Tool call check_export_job({"job":"nightly-billing-export"})' in result.out

    def test_compaction_markers_are_not_in_the_record(
        self, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        result = run_cli(capsys, ['show', '--store', populated.store, populated.support_runs[-1]])
        assert 'record        10 messages' in result.out
        assert 'removed from this context window' not in result.out

    def test_json(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['show', '--store', populated.store, populated.support_runs[0], '--json'])
        document = json.loads(result.out)
        assert set(document) == {'store', 'run', 'snapshots', 'record'}
        assert set(document['run']) == RUN_KEYS
        assert [(s['index'], s['state'], s['messages']) for s in document['snapshots']] == [
            (0, 'complete', 1),
            (1, 'complete', 3),
            (2, 'complete', 4),
        ]
        record = document['record']
        assert all(set(item) == {'position', 'role', 'timestamp', 'lines', 'message'} for item in record)
        assert [(item['position'], item['role']) for item in record] == [
            (0, 'user'),
            (1, 'assistant'),
            (2, 'tool'),
            (3, 'assistant'),
        ]
        assert record[0]['message']['kind'] == 'request'
        assert record[0]['message']['parts'][0]['content'].count(DETAIL) == 1


def test_a_run_with_nothing_saved(populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, ['show', '--store', populated.store, ORPHAN])
    assert result.status == 0
    assert 'conversation  -' in result.out
    assert 'snapshots     0 complete, 0 interrupted; none saved yet' in result.out
    assert 'record        0 messages' in result.out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_progress_bar_for_many_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / 'many.db'

    async def fill() -> None:
        sqlite = SqliteStepStore(store)
        # Not indexed as saved: the search below has every run to catch up, as a store another writer filled.
        persistence = StepPersistence(store=sqlite, index_on_save=False)
        agent = Agent(TestModel(call_tools=[]), name='many', capabilities=[persistence])
        try:
            for turn in range(21):
                await agent.run(f'turn {turn}', conversation_id='busy')
        finally:
            await sqlite.aclose()

    asyncio.run(fill())
    terminal = _Terminal()
    monkeypatch.setattr(sys, 'stderr', terminal)
    assert main(['runs', '--store', str(store), '--conversation', 'busy']) == 0
    assert terminal.getvalue().endswith('reading runs [############################] 21/21\n')
    assert capsys.readouterr().out.splitlines()[-1] == '21 runs'
    # The first search catches the index up on every run in scope: a bar over the runs it indexes.
    terminal.seek(0)
    terminal.truncate()
    assert main(['search', '--store', str(store), '--conversation', 'busy', 'turn 20']) == 0
    assert terminal.getvalue().endswith('indexing runs [############################] 21/21\n')
    assert "for 'turn 20' in 42 persisted messages" in capsys.readouterr().out
