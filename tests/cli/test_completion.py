"""Shell completion (argcomplete, the `completion` extra): the scripts, and Tab answered from the parser."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ._support import run_cli

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec('argcomplete') is None, reason='argcomplete (the completion extra) is not installed'
)

BIN = str(Path(sys.executable).parent)


def tab(line: str, tmp_path: Path) -> list[str]:
    """What `durable-recall` answers a shell's Tab at the end of `line` (argcomplete's protocol)."""
    answer = tmp_path / 'answer'
    env = {
        **os.environ,
        '_ARGCOMPLETE': '1',
        'COMP_LINE': line,
        'COMP_POINT': str(len(line)),
        '_ARGCOMPLETE_STDOUT_FILENAME': str(answer),
    }
    env.pop('DURABLE_RECALL_STORE', None)
    done = subprocess.run(
        [sys.executable, '-m', 'durable_recall.cli'], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return [word.strip() for word in answer.read_text().split('\v') if word.strip()]


@pytest.mark.parametrize('shell', ['bash', 'zsh'])
def test_the_script_is_printed(capsys: pytest.CaptureFixture[str], shell: str) -> None:
    result = run_cli(capsys, ['completion', shell])
    assert result.status == 0 and result.err == ''
    assert 'durable-recall' in result.out and '_ARGCOMPLETE' in result.out
    if shell == 'zsh':
        assert result.out.startswith('#compdef durable-recall')
    else:
        assert 'complete -o nospace -o default -o bashdefault -F _python_argcomplete durable-recall' in result.out


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, ['completion', 'fish']).status == 2


def test_commands_options_and_choices_complete(tmp_path: Path) -> None:
    assert tab('durable-recall se', tmp_path) == ['search']
    assert set(tab('durable-recall ', tmp_path)) >= {'demo', 'conversations', 'runs', 'show', 'search', 'check'}
    assert '--ranking' in tab('durable-recall search --ra', tmp_path)
    assert set(tab('durable-recall search --ranking ', tmp_path)) == {'bm25', 'hybrid'}
    assert set(tab('durable-recall demo --engine ', tmp_path)) == {'temporal', 'dbos', 'none'}
    assert '--wide' in tab('durable-recall runs --w', tmp_path)


@pytest.mark.skipif(shutil.which('bash') is None, reason='no bash on this machine')
def test_bash_completes_with_the_printed_script() -> None:
    script = (
        'eval "$(durable-recall completion bash)"; COMP_WORDS=(durable-recall che); COMP_CWORD=1; '
        'COMP_LINE="durable-recall che"; COMP_POINT=${#COMP_LINE}; '
        '_python_argcomplete durable-recall che durable-recall; echo "${COMPREPLY[@]}"'
    )
    env = {**os.environ, 'PATH': BIN + os.pathsep + os.environ.get('PATH', '')}
    done = subprocess.run(['bash', '-c', script], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ['check']
