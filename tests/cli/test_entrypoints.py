"""The command as users start it: the console script and `python -m durable_recall`, in fresh processes."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ._support import Populated


def console_script() -> Path:
    script = Path(sysconfig.get_path('scripts')) / 'durable-recall'
    if not script.is_file():
        pytest.skip('the durable-recall console script is not installed (pip install -e .)')
    return script


def run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=60, check=False)


def test_python_dash_m_help() -> None:
    result = run(sys.executable, '-m', 'durable_recall', '--help')
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('usage: durable-recall [-h] [--version] COMMAND ...')
    for command in ('demo', 'conversations', 'runs', 'show', 'search'):
        assert f'    {command}' in result.stdout


def test_console_script_help_and_error() -> None:
    script = console_script()
    result = run(script, 'search', '--help')
    assert result.returncode == 0 and 'usage: durable-recall search' in result.stdout
    missing = run(script, 'runs', '--store', 'no/such/store.db', '--all')
    assert missing.returncode == 1
    assert missing.stdout == ''
    assert missing.stderr == (
        'durable-recall: error: no store at no/such/store.db: the file does not exist '
        '(`durable-recall demo` creates one)\n'
    )


def test_a_closed_pipe_is_not_a_traceback(populated: Populated) -> None:
    script = console_script()
    # Like `durable-recall ... | head -1` once head has gone: nobody reads what the command prints.
    command = [str(script), 'show', '--store', populated.store, populated.support_runs[-1], '--json']
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert stderr == ''
