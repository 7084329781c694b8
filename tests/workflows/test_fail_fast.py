"""The samples check their store at start: a database that does not exist ends them with one line.

Without the check a store opens lazily, so a worker would start, say nothing and fail each
activity while the starter waits for ever.
"""

from __future__ import annotations

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
