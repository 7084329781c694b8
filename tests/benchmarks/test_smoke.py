"""The benchmark generator, direct writer, oracle and runner, at a tiny size, so they keep working.

The direct writer must save exactly the snapshots a real agent with `StepPersistence` and
`SlidingWindowCompaction` saves: that is what lets the benchmark build large stores quickly and
still measure what the library really does.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks._measure import ranking_agreement
from benchmarks._script import conversation_from_json, conversation_to_json, generate_conversation, make_queries
from benchmarks._venv import CACHE
from benchmarks.histories import replay_with_agent, write_conversation
from benchmarks.oracle import Oracle, overlap_at

from durable_recall import InMemoryStepStore, SqliteStepStore
from durable_recall.history import message_hash

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def test_generation_is_deterministic_and_round_trips_as_json() -> None:
    first = generate_conversation(7, 150)
    again = generate_conversation(7, 150)
    assert first == again
    assert first.message_count >= 150
    assert conversation_from_json(json.loads(json.dumps(conversation_to_json(first)))) == first
    assert generate_conversation(8, 150) != first
    assert make_queries(first, 6) == make_queries(again, 6)


def _rows(path: Path) -> list[Any]:
    with sqlite3.connect(path) as conn:
        snapshots = conn.execute(
            'SELECT run_id, idx, step_index, state, ranges, size FROM dr_snapshots ORDER BY run_id, idx'
        ).fetchall()
        messages = conn.execute(
            'SELECT r.run_id, COUNT(*) FROM dr_messages AS m JOIN dr_runs AS r ON r.run_no = m.run_no'
            ' GROUP BY r.run_id ORDER BY r.run_id'
        ).fetchall()
    return [snapshots, messages]


async def test_direct_writer_saves_what_a_real_agent_saves(tmp_path: Path) -> None:
    # A small window, so compaction (and core merging the marker into the next prompt) happens often.
    conversation = generate_conversation(3, 160)
    agent_store, direct_store = SqliteStepStore(tmp_path / 'agent.db'), SqliteStepStore(tmp_path / 'direct.db')
    try:
        by_agent = await replay_with_agent(agent_store, conversation, window=6)
        direct = await write_conversation(direct_store, conversation, window=6)
        assert by_agent.messages == direct.messages == conversation.message_count
        assert [message_hash(m) for m in by_agent.history] == [message_hash(m) for m in direct.history]
        assert _rows(tmp_path / 'agent.db') == _rows(tmp_path / 'direct.db')
        for run in await agent_store.list_runs():
            expected = await agent_store.list_snapshots(run.run_id, include_interrupted=True)
            found = await direct_store.list_snapshots(run.run_id, include_interrupted=True)
            assert [[message_hash(m) for m in s.messages] for s in found] == [
                [message_hash(m) for m in s.messages] for s in expected
            ]
        assert any(row[4].count('[') > 2 for row in _rows(tmp_path / 'direct.db')[0]), 'no snapshot was compacted'
    finally:
        await agent_store.aclose()
        await direct_store.aclose()


async def test_our_ranking_matches_the_oracle() -> None:
    conversation = generate_conversation(5, 200)
    store = InMemoryStepStore()
    written = await write_conversation(store, conversation)
    oracle = Oracle(written.history)
    queries = make_queries(conversation, 8)
    overlaps = await ranking_agreement(store, conversation, written.history, oracle, queries)
    assert overlaps == [1.0] * len(queries)


def test_overlap_counts_ties_at_the_cut_as_agreement() -> None:
    scores = [3.0, 2.0, 2.0, 0.0]
    assert overlap_at([0, 2], scores, k=2) == 1.0
    assert overlap_at([0, 3], scores, k=2) == 0.5
    assert overlap_at([], [0.0, 0.0]) == 1.0


def test_runner_prints_the_table_at_a_tiny_size() -> None:
    done = subprocess.run(
        [sys.executable, '-m', 'benchmarks.run', '--size', 'tiny', '--no-reference'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = done.stdout
    assert 'search p50, warm (ms)' in out
    assert 'overlap@10 vs exact BM25 oracle' in out
    assert '1.000 (min 1.00)' in out
    assert 'search cost vs size of other conversations' in out
    assert 'CLI start: durable-recall --help (ms)' in out
    assert 'CLI start: durable-recall conversations --store FILE (ms)' in out


def test_suite_runs_every_workload_and_writes_the_readme_tables(tmp_path: Path) -> None:
    markdown = tmp_path / 'figures.md'
    done = subprocess.run(
        [sys.executable, '-m', 'benchmarks.suite', '--tiny', '--markdown', str(markdown)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    summary = done.stdout.split('every target, per workload:')[1]
    for target in ('search p50, warm (ms): <= 2 ms', 'storage / raw message text', 'overlap@10 vs exact BM25 oracle'):
        assert target in summary
    for workload in ('long-runs tiny', 'chat tiny'):
        assert workload in summary
    text = markdown.read_text()
    assert text.startswith('`python -m benchmarks.suite --tiny` on ')
    assert '| target | long-runs tiny | chat tiny |' in text
    assert text.count('| metric | ours SQLite |') == 2  # each run's own table
    assert 'Why a target is missed:' in text  # the tiny stores miss the storage target, with the reason


@pytest.mark.skipif(not (CACHE / 'harness-0.62.0' / '.ready').exists(), reason='the reference venv is not built')
def test_reference_driver_ingests_and_searches(tmp_path: Path) -> None:
    conversation = generate_conversation(9, 40)
    script = tmp_path / 'script.json'
    script.write_text(json.dumps(conversation_to_json(conversation)))
    queries = tmp_path / 'queries.json'
    queries.write_text(json.dumps(make_queries(conversation, 2)))
    python = str(CACHE / 'harness-0.62.0' / 'bin' / 'python')
    env = {'PYTHONPATH': str(ROOT), 'PATH': '/usr/bin:/bin'}
    database = str(tmp_path / 'ref.db')
    for command in (
        ['ingest', '--db', database, '--script', str(script)],
        ['search', '--db', database, '--conversation', conversation.conversation_id, '--queries', str(queries)],
    ):
        done = subprocess.run(
            [python, '-m', 'benchmarks._reference', *command], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.splitlines()[-1])['import_seconds'] > 0


def test_block_hits_reads_runs_from_headers_and_change_lines() -> None:
    from benchmarks._measure import block_hits

    runs = ['0192aaaa-0000-7000-8000-00002c5de84c', '0192aaaa-0000-7000-8000-0000b0ae3684', 'short-run']
    block = '\n'.join(
        [
            '[score: 11.8 | run: …2c5de84c | 2023-05-08 13:56 UTC]',
            '>[0] User: first',
            ' [1] Assistant: reply',
            '  (run: …b0ae3684 | 2023-05-09 10:00 UTC)',
            '>[2] User: second',
            '  (run: short-run)',
            '>[7] User: third',
        ]
    )
    assert block_hits(block, runs) == [(runs[0], 0), (runs[1], 2), ('short-run', 7)]
