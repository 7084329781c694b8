"""DBOS crash recovery of a compacted 100-step single-run tool loop: the same views, store and answers.

`_compaction_dbos_app.py` runs one agent run of `DR_LOOP_STEPS` (default 100) tool steps under
`SlidingWindowCompaction(max_messages=40, keep_messages=20)`, `StepPersistence` and
`ConversationSearch` on a SQLite store, with DBOS on a SQLite system database in `tmp_path`. A
first process ends itself with `os._exit` when the model is handed the return of a step past the
middle of the loop (after three store writes, with snapshots queued and not yet written); a second
launches DBOS on the same databases, which recovers the workflow, and then runs the same loop
uncrashed as the reference. Asserted, against the uncrashed run:

- the model's views: the views the crashed process handed the model, followed by the recovered
  workflow's, are the clean run's, message for message (what the window kept, its marker, the
  search answer); recovery hands the model nothing twice and the window cuts in the same places;
- the store: the same snapshots (index, step, state, every message) and the same rows, so the
  recovered run wrote nothing twice and lost nothing it had queued;
- the search: the run's own answer (it recalls step 1, which the window dropped) and searches
  made afterwards over each conversation give the same text.

Run ids and times differ between any two runs and are normalized away (`_compaction_dbos_views`).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from durable_recall import SnapshotHistorySource, SqliteStepStore
from durable_recall.index import Bm25Params
from durable_recall.search import SearchEngine, SearchRequest
from durable_recall.text import DEFAULT_SKIP_TOOLS
from tests.compaction._loop import DETAIL, DETAIL_QUERY, step_result

from .._services.dbos import sqlite_system_db
from ._compaction_dbos_views import normalize, read_views, view_content

pytestmark = [pytest.mark.anyio, pytest.mark.dbos]

REPO_ROOT = Path(__file__).resolve().parents[2]
STEPS = int(os.environ.get('DR_LOOP_STEPS', '100'))
CRASH_AT = STEPS // 2 + 7
"""The step whose return kills the first process: past three 16-snapshot writes, mid-batch."""
CRASH_EXIT_CODE = 17
QUERIES = (DETAIL_QUERY, f'batch {7 * (STEPS // 3)} ledger', f'row{STEPS - 1}x3', 'checked ledger rows')


def run_app(mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the app in a process of its own (importing it here would register its workflow in this process)."""
    return subprocess.run(
        [sys.executable, '-m', 'tests.durable._compaction_dbos_app', mode, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, 'DR_LOOP_STEPS': str(STEPS)},
    )


def quote(output: str) -> str:
    match = re.search(r'QUOTE<<(.*)>>', output, re.DOTALL)
    assert match is not None, output
    return normalize(match.group(1))


async def stored(store: SqliteStepStore, conversation_id: str) -> list[list[Any]]:
    """Every snapshot of the conversation's runs, as content: index, step, state and messages."""
    out: list[list[Any]] = []
    for run in await store.list_runs(conversation_id=conversation_id):
        for snapshot in await store.list_snapshots(run.run_id, include_interrupted=True):
            out.append([snapshot.index, snapshot.step_index, snapshot.state, view_content(snapshot.messages)])
    return out


def rows(database: Path, conversation_id: str) -> list[tuple[int, ...]]:
    """Row counts per run of the tables a snapshot writes: a duplicate write would show here."""
    with closing(sqlite3.connect(database)) as conn:
        return conn.execute(
            'SELECT (SELECT COUNT(*) FROM dr_snapshots s WHERE s.run_id = r.run_id),'
            ' (SELECT COUNT(*) FROM dr_messages m WHERE m.run_no = r.run_no),'
            ' (SELECT COUNT(*) FROM dr_message_refs f WHERE f.run_no = r.run_no)'
            ' FROM dr_runs r WHERE r.conversation_id = ? ORDER BY r.started_at, r.run_id',
            (conversation_id,),
        ).fetchall()


async def answers(store: SqliteStepStore, conversation_id: str) -> list[str]:
    """What the search tool answers, within the conversation, for each of `QUERIES`."""
    engine = SearchEngine(
        source=SnapshotHistorySource(store),
        params=Bm25Params(),
        max_matches=10,
        context_lines=5,
        max_result_bytes=16_000,
        skip_tools=DEFAULT_SKIP_TOOLS,
    )
    return [
        normalize(
            await engine.search(SearchRequest(query=query), scope='conversation', conversation_id=conversation_id)
        )
        for query in QUERIES
    ]


@pytest.mark.timeout(300)
async def test_a_crashed_compacted_loop_recovers_to_exactly_the_uncrashed_run(tmp_path: Path) -> None:
    database, views, out = tmp_path / 'store.db', tmp_path / 'views.jsonl', tmp_path / 'out.json'
    # Ids of one length: an answer cut at its byte budget must be cut at the same place in both.
    crashed, clean = f'loop-crash-{uuid.uuid4()}', f'loop-clean-{uuid.uuid4()}'
    crashed_workflow, clean_workflow = f'crash-{uuid.uuid4()}', f'clean-{uuid.uuid4()}'
    common = ['--system-db', sqlite_system_db(tmp_path).url, '--store', str(database), '--views', str(views)]
    common += ['--workflow-id', crashed_workflow, '--conversation', crashed, '--crash-at', str(CRASH_AT)]

    first = run_app('crash', *common, '--crash-exit-code', str(CRASH_EXIT_CODE))
    assert first.returncode == CRASH_EXIT_CODE, first.stderr
    before = read_views(views, crashed_workflow)
    assert len(before) == CRASH_AT, 'the model answered steps 0 to CRASH_AT - 1, then the process died'
    store = SqliteStepStore(database=database)
    try:
        written = await stored(store, crashed)
        assert 0 < len(written) < CRASH_AT, 'the crash left snapshots queued and not written'

        second = run_app(
            'recover', *common, '--clean-workflow-id', clean_workflow, '--clean-conversation', clean, '--out', str(out)
        )
        assert second.returncode == 0, second.stderr
        outputs = json.loads(out.read_text())

        after = read_views(views, crashed_workflow)[CRASH_AT:]
        expected = read_views(views, clean_workflow)
        assert len(expected) == STEPS + 2  # the steps, the search, the quote
        assert max(len(view) for view in expected) <= 41
        assert before + after == expected, 'recovery hands the model exactly the views of an uncrashed run'

        answer = quote(outputs['clean'])
        assert step_result(1) in answer and DETAIL in answer, 'the run recalls what its window dropped at step 1'
        assert quote(outputs['recovered']) == answer

        assert await stored(store, crashed) == await stored(store, clean)
        stored_rows = rows(database, crashed)
        assert len(stored_rows) == 1
        assert stored_rows == rows(database, clean), 'the recovered run wrote nothing twice'
        assert await answers(store, crashed) == await answers(store, clean)
    finally:
        await store.aclose()
