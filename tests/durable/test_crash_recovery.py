"""DBOS crash recovery, for real: a process killed right after the search step, recovered by a fresh one.

On SQLite and PostgreSQL system databases. `_crash_app.py` runs the 7-run recall conversation (a
detail seen in run 1, dropped by compaction, recalled by search in run 7) in a subprocess that ends
itself with `os._exit` in the first model call after the search step completed. A second
subprocess launches DBOS on the same system database and the same SQLite store, which recovers the
pending workflow, and then runs the same conversation uncrashed as the reference. Asserted:

- the search body ran once for the crashed conversation (the recovered workflow got the recorded
  search result from DBOS);
- the recovered workflow's final answer quotes exactly the search answer the first process saw;
- the store holds what the uncrashed conversation stored, run for run: no duplicate run,
  snapshot or message.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path

from .._services.dbos import DBOSSystemDB
from ._recall_script import DETAIL

REPO_ROOT = Path(__file__).resolve().parents[2]
CRASH_EXIT_CODE = 17
"""What the crashing process exits with; `_crash_app` is only ever run, never imported here (importing it
would register its DBOS workflow in this process's DBOS registry)."""


def run_app(mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'tests.durable._crash_app', mode, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def quote(output: str) -> str:
    match = re.search(r'QUOTE<<(.*)>>', output, re.DOTALL)
    assert match is not None, output
    return match.group(1)


def stored_per_run(store: Path, conversation_id: str) -> list[tuple[int, int]]:
    """(snapshot rows, message rows) of each of the conversation's runs, in the order they started."""
    with closing(sqlite3.connect(store)) as conn:
        return conn.execute(
            'SELECT (SELECT COUNT(*) FROM dr_snapshots s WHERE s.run_id = r.run_id),'
            ' (SELECT COUNT(*) FROM dr_messages m WHERE m.run_no = r.run_no)'
            ' FROM dr_runs r WHERE r.conversation_id = ? ORDER BY r.started_at, r.run_id',
            (conversation_id,),
        ).fetchall()


def test_recovery_after_a_crash_right_after_the_search(dbos_system_db: DBOSSystemDB, tmp_path: Path) -> None:
    store, log, answer, out = (tmp_path / name for name in ('store.db', 'searches.log', 'answer.txt', 'out.json'))
    crashed, clean = f'conv-crashed-{uuid.uuid4()}', f'conv-clean-{uuid.uuid4()}'
    paths = {'--store': store, '--log': log, '--answer': answer}
    common = ['--crash-exit-code', str(CRASH_EXIT_CODE), '--system-db', dbos_system_db.url]
    common += [text for option, path in paths.items() for text in (option, str(path))]
    workflow = ['--workflow-id', f'crash-{uuid.uuid4()}', '--conversation', crashed]

    first = run_app('crash', *common, *workflow)
    assert first.returncode == CRASH_EXIT_CODE, first.stderr
    recorded = answer.read_text()
    assert DETAIL in recorded, 'the search found the detail that compaction dropped'
    assert log.read_text().splitlines() == [crashed]

    clean_workflow = ['--clean-workflow-id', f'clean-{uuid.uuid4()}', '--clean-conversation', clean]
    second = run_app('recover', *common, *workflow, *clean_workflow, '--out', str(out))
    assert second.returncode == 0, second.stderr
    result = json.loads(out.read_text())

    assert log.read_text().splitlines() == [crashed, clean], 'recovery must not run the search body again'
    assert quote(result['recovered'][-1]) == recorded
    assert len(result['recovered']) == len(result['clean']) == 7

    per_run = stored_per_run(store, crashed)
    assert len(per_run) == 7
    assert per_run == stored_per_run(store, clean), 'a recovered conversation stores exactly what a clean one does'
