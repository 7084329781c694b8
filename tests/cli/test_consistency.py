"""Issue #14's consistency items: the same unknown conversation fails alike, empty stores, `demo --json`,
a missing extra named, and Ctrl-C reported as `interrupted` with status 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from durable_recall.cli._main import _missing_package

from ._support import Populated, run_cli


@pytest.mark.parametrize('command', ['runs', 'index', 'search'])
def test_an_unknown_conversation_is_an_error_for_every_command(
    command: str, populated: Populated, capsys: pytest.CaptureFixture[str]
) -> None:
    words = ['export'] if command == 'search' else []
    result = run_cli(capsys, [command, '--store', populated.store, '--conversation', 'nope', *words])
    assert result.status == 1
    assert result.err == (
        f"durable-recall: error: no conversation 'nope' in {populated.store}: "
        '`durable-recall conversations` lists them\n'
    )


@pytest.mark.parametrize('command', [['conversations'], ['runs', '--all'], ['index', '--all'], ['show', 'r']])
def test_an_empty_store_is_a_usage_error(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, [command[0], '--store', '', *command[1:]])
    assert result.status == 2
    assert 'argument --store: is empty: pass a SQLite path or a postgresql:// URL' in result.err
    assert 'no store at' not in result.err


def test_demo_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(tmp_path / 'd.db'), '--json'])
    assert result.status == 0, result.err
    document = json.loads(result.out)  # the whole of stdout is the document: no story printed
    assert document['recovered'] is True and document['engine'] == 'none'
    assert [turn['turn'] for turn in document['turns']] == [1, 2, 3, 4, 5, 6]
    searches = [search for turn in document['turns'] for search in turn['searches']]
    assert all(set(search) == {'arguments', 'answer'} for search in searches)
    assert document['detail'] in document['turns'][-1]['output']
    assert set(document['turns'][0]) == {
        'turn',
        'run_id',
        'engine_id',
        'prompt',
        'output',
        'new_messages',
        'searches',
        'detail',
        'compaction',
        'persisted',
        'recovered',
    }
    # The whole story is in the document: what the text prints for each turn, compaction included.
    text = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(tmp_path / 't.db')])
    flat = ' '.join(text.out.split())
    compactions = [turn['compaction'] for turn in document['turns'] if turn['compaction'] is not None]
    assert compactions and any('The export path left the context with them.' in line for line in compactions)
    stories = [*compactions, *(turn['persisted']['text'] for turn in document['turns'])]
    assert all(' '.join(line.split()) in flat for line in stories)
    assert document['turns'][0]['detail'] is not None and document['turns'][-1]['recovered'] is not None
    assert ' '.join(document['result'].split()) in flat


@pytest.mark.parametrize(
    ('error', 'expected'),
    [
        (ModuleNotFoundError("No module named 'psycopg_pool'", name='psycopg_pool'), 'durable-recall[postgres]'),
        (ModuleNotFoundError("No module named 'dbos'", name='dbos'), 'durable-recall[dbos]'),
        (
            ModuleNotFoundError("No module named 'temporalio.client'", name='temporalio.client'),
            'durable-recall[temporal]',
        ),
    ],
)
def test_a_missing_extra_is_named(error: ImportError, expected: str) -> None:
    assert expected in _missing_package(error)
    wrapped = ImportError('PostgresStepStore needs psycopg 3 and psycopg-pool')
    wrapped.__cause__ = error
    assert expected in _missing_package(wrapped)


def test_ctrl_c_prints_interrupted_and_exits_130(tmp_path: Path) -> None:
    """SIGINT in the middle of a demo (imports done, the agent running): one line, status 130."""
    process = subprocess.Popen(
        [sys.executable, '-m', 'durable_recall', 'demo', '--engine', 'none', '--store', str(tmp_path / 'd.db')],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, 'COLUMNS': '120'},
    )
    assert process.stdout is not None
    # Wait for the demo's header: the library is loaded and the loop is running.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and 'durable-recall demo' not in process.stdout.readline():
        pass
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    if process.returncode == 0:
        pytest.skip('the demo finished before the interrupt arrived')
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == 'durable-recall: interrupted'
    assert 'Traceback' not in err


@pytest.mark.parametrize('delay', [0.3, 0.6])  # earlier, Python itself has not set up SIGINT yet
def test_ctrl_c_while_loading(delay: float, populated: Populated) -> None:
    process = subprocess.Popen(
        [sys.executable, '-m', 'durable_recall', 'search', '--store', populated.store, '--all', 'export'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    if process.returncode == 0:
        pytest.skip('the search finished before the interrupt arrived')
    assert process.returncode == 130, err
    assert 'Traceback' not in err and err.strip().endswith('interrupted')
