"""The samples check their store at start: a database that does not exist ends them with one line.

Without the check a store opens lazily, so a worker would start, say nothing and fail each
activity while the starter waits for ever.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from workflows.conversation import STORE_VARIABLE

REPO_ROOT = Path(__file__).resolve().parents[2]


def missing_database(postgres_url: str) -> str:
    """The test server's URL, naming a database that does not exist there."""
    base, _, _ = postgres_url.rpartition('/')
    return f'{base}/durable_recall_no_such_db'


@pytest.mark.parametrize(
    ('module', 'process'),
    [('workflows.temporal.worker', 'worker'), ('workflows.dbos.app', 'app')],
)
def test_a_sample_pointed_at_a_missing_database_fails_fast_with_one_line(
    tmp_path: Path, postgres_url: str, module: str, process: str
) -> None:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)])}
    env.pop(STORE_VARIABLE, None)
    done = subprocess.run(
        [sys.executable, '-m', module, '--postgres', missing_database(postgres_url)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f'{process}: error: cannot use the store PostgresStepStore(')
    assert 'durable_recall_no_such_db' in lines[0] and 'Traceback' not in done.stderr


@pytest.mark.skipif(importlib.util.find_spec('openai') is not None, reason='openai is installed here')
@pytest.mark.parametrize(
    ('module', 'process'),
    [('workflows.temporal.worker', 'worker'), ('workflows.dbos.app', 'app')],
)
def test_a_model_whose_package_is_missing_fails_at_start_with_one_line(
    tmp_path: Path, module: str, process: str
) -> None:
    """Not in an activity or step later, where it would only show as retries (a workflow task retried for ever)."""
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)])}
    env.pop(STORE_VARIABLE, None)
    env['OPENAI_API_KEY'] = 'sk-not-used'
    done = subprocess.run(
        [sys.executable, '-m', module, '--model', 'openai:gpt-5'],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"{process}: error: --model openai:gpt-5 needs its provider's package"), line
    assert "pip install -e '.[demo]'" in line and 'openai' in line
    assert not list(tmp_path.iterdir()), 'nothing was started or written'
