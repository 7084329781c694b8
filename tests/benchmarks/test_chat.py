"""The chat workload at a tiny size: its script, its writer, its storage breakdown and its report keep working.

No timing is asserted: speed goals live in the benchmark's table, never in timed tests. What is
checked is that the report has its rows and that the figures in it are sane (positive, within
the store, the exact ranking).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks._breakdown import (
    MAPS,
    PER_RUN_TABLES,
    postgres_breakdown,
    postgres_compacted,
    size,
    sqlite_breakdown,
    where_bytes_go,
)
from benchmarks._chat import CHAT_WINDOW, generate_chat
from benchmarks._cli_start import CliStart, CliTiming, _import_tree
from benchmarks._script import raw_text_bytes
from benchmarks.histories import replay_with_agent, write_conversation

from durable_recall import SqliteStepStore, update_index
from durable_recall.history import message_hash
from tests._services.stores import StoreKit

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def test_a_chat_is_deterministic_with_an_exchange_per_run_and_a_tool_call_now_and_then() -> None:
    chat = generate_chat(7, 400)
    assert chat == generate_chat(7, 400)
    assert chat != generate_chat(8, 400)
    assert len(chat.runs) == 400
    with_tool = [run for run in chat.runs if len(run.steps) == 2]
    assert all(len(run.steps) in (1, 2) and not run.steps[-1].calls for run in chat.runs)
    assert all(len(run.steps[0].calls) == 1 for run in with_tool)
    assert 0.02 <= len(with_tool) / len(chat.runs) <= 0.1
    assert chat.message_count == 2 * len(chat.runs) + 2 * len(with_tool)
    # Chat-length: a few sentences, not pages of tool output.
    assert max(len(run.steps[-1].text) for run in chat.runs) < 2_000


async def test_the_direct_writer_saves_what_a_real_agent_saves_for_a_chat(tmp_path: Path) -> None:
    chat = generate_chat(3, 30)
    agent_store, direct_store = SqliteStepStore(tmp_path / 'agent.db'), SqliteStepStore(tmp_path / 'direct.db')
    try:
        by_agent = await replay_with_agent(agent_store, chat, window=CHAT_WINDOW)
        direct = await write_conversation(direct_store, chat, window=CHAT_WINDOW)
        assert by_agent.messages == direct.messages == chat.message_count
        assert [message_hash(m) for m in by_agent.history] == [message_hash(m) for m in direct.history]
        runs = await agent_store.list_runs()
        assert len(runs) == len(chat.runs)
        for run in runs:
            expected = await agent_store.list_snapshots(run.run_id, include_interrupted=True)
            found = await direct_store.list_snapshots(run.run_id, include_interrupted=True)
            assert [[message_hash(m) for m in s.messages] for s in found] == [
                [message_hash(m) for m in s.messages] for s in expected
            ]
        last = await direct_store.list_snapshots(runs[-1].run_id, include_interrupted=True)
        assert len(last[-1].messages) <= CHAT_WINDOW + 4, 'the window did not slide'
    finally:
        await agent_store.aclose()
        await direct_store.aclose()


async def test_the_breakdown_accounts_for_every_table_and_index(sql_kit: StoreKit) -> None:
    chat = generate_chat(5, 30)
    await write_conversation(sql_kit.store, chat, window=CHAT_WINDOW)
    await update_index(sql_kit.store)
    await sql_kit.store.aclose()
    if sql_kit.sqlite_path is not None:
        breakdown = sqlite_breakdown(sql_kit.sqlite_path)
    else:
        assert sql_kit.postgres_url is not None and sql_kit.postgres_schema is not None
        breakdown = postgres_breakdown(sql_kit.postgres_url, sql_kit.postgres_schema)
    tables = {table.table: table for table in breakdown.tables}
    assert {'dr_runs', 'dr_messages', 'dr_snapshots'} <= set(tables)
    assert tables['dr_runs'].rows == len(chat.runs)
    assert [table.bytes for table in breakdown.tables] == sorted((t.bytes for t in breakdown.tables), reverse=True)
    for table in breakdown.tables:
        assert table.bytes == sum(part.bytes for part in table.parts) > 0
        assert all(column.bytes > 0 and column.values <= table.rows for column in table.columns)
    assert 0 <= breakdown.unaccounted < breakdown.total
    assert len(tables['dr_runs'].parts) >= 2, "the runs table's indexes are listed under it"
    # The reason printed for a missed storage target names the floors, measured on this breakdown.
    raw = raw_text_bytes(chat)
    reason = where_bytes_go(breakdown, raw_bytes=raw, runs=len(chat.runs), messages=chat.message_count)
    per_run = sum(tables[name].bytes for name in PER_RUN_TABLES)
    assert f'take {size(per_run / len(chat.runs))} a run, {per_run / raw:.2f}x the text' in reason
    assert f'the message bodies, each compressed alone, {tables["dr_messages"].bytes / raw:.2f}x' in reason
    maps = sum(part.bytes for table in breakdown.tables for part in table.parts if part.name == MAPS)
    if sql_kit.postgres_url is None:
        assert maps == 0 and 'visibility maps' not in reason
    else:
        assert maps > 0, 'a vacuumed heap has a free-space and a visibility map'
        assert f"Postgres's free-space and visibility maps {size(maps)}" in reason
        assert sql_kit.postgres_url is not None and sql_kit.postgres_schema is not None
        compacted = postgres_compacted(sql_kit.postgres_url, sql_kit.postgres_schema)
        assert 0 < compacted <= breakdown.total
        told = where_bytes_go(
            breakdown, raw_bytes=raw, runs=len(chat.runs), messages=chat.message_count, compacted=compacted - 1
        )
        assert f'after a VACUUM FULL the store is {size(compacted - 1)}' in told


IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       100 |        100 |   encodings
import time:        50 |        500 |       pydantic_ai.capabilities
import time:       300 |        800 |     pydantic_ai.agent
import time:        20 |        900 |   pydantic_ai
import time:       900 |       1000 |     durable_recall.text
import time:        30 |       1100 |   durable_recall.base
import time:        40 |       2000 | durable_recall.cli
import time:        10 |         10 | site
"""


def test_import_time_names_the_module_that_dominates() -> None:
    roots = _import_tree(IMPORTTIME)
    assert [(root.name, root.cumulative) for root in roots] == [('durable_recall.cli', 0.002), ('site', 0.00001)]
    assert [child.name for child in roots[0].children] == ['encodings', 'pydantic_ai', 'durable_recall.base']
    start = CliStart([CliTiming('durable-recall --help', [0.5, 0.7, 0.6])], imports=0.002)
    start.chain = [('durable_recall.cli', 0.002), ('durable_recall.base', 0.0011), ('durable_recall.text', 0.001)]
    assert 'durable_recall.text' in start.reason() and start.commands[0].median == 0.6
    start.chain = [('durable_recall.cli', 0.5), ('pydantic_ai', 0.4), ('pydantic_ai.agent', 0.3)]
    start.dominant = ('pydantic_ai', 0.4)
    reason = start.reason()
    assert '`pydantic_ai` dominates (400 ms), imported through durable_recall.cli' in reason
    assert 'inside it pydantic_ai.agent 300 ms' in reason


def test_the_runner_prints_the_chat_report_at_a_tiny_size(tmp_path: Path) -> None:
    out_json = tmp_path / 'chat.json'
    done = subprocess.run(
        [sys.executable, '-m', 'benchmarks.run', '--workload', 'chat', '--size', 'tiny', '--json', str(out_json)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    rows = {line.split('  ')[0]: line for line in out.splitlines()}
    for metric in (
        'search p50, warm (ms)',
        'search p50, cold process (ms)',
        'ingest (messages/s: stored and indexed)',
        'storage / raw message text',
        'overlap@10 vs exact BM25 oracle',
        'CLI start: durable-recall --help (ms)',
        'CLI start: durable-recall conversations --store FILE (ms)',
    ):
        assert metric in rows, f'{metric!r} missing from:\n{out}'
        assert 'met' in rows[metric] or 'MISSED' in rows[metric], rows[metric]
    assert 'workload chat, size tiny' in out
    assert 'where the bytes go, ours SQLite' in out
    assert '1.000 (min 1.00)' in rows['overlap@10 vs exact BM25 oracle']
    if 'MISSED' in out:
        assert 'why a target is missed:' in out

    report: dict[str, Any] = json.loads(out_json.read_text())
    assert report['workload'] == 'chat' and report['runs'] == 40
    ours = report['sides'][0]
    assert ours['label'] == 'ours SQLite'
    assert ours['messages'] == report['truth_messages'] >= 80
    assert ours['ingest_per_second'] > 0
    assert ours['storage']['total'] > report['raw_bytes'] > 0
    assert ours['overlap'] == [1.0] * 4
    assert len(ours['timings']['cold']) == 1 and ours['timings']['warm']
    assert all(value > 0 for value in ours['timings']['cold'] + ours['timings']['warm'])
    [breakdown] = report['breakdowns']
    assert breakdown['total'] == ours['storage']['total']
    assert sum(table['bytes'] for table in breakdown['tables']) <= breakdown['total']
    assert [command['label'] for command in report['cli']['commands']] == [
        'durable-recall --help',
        'durable-recall conversations --store FILE',
    ]
    assert all(0 < sample < 60 for command in report['cli']['commands'] for sample in command['samples'])
    assert report['cli']['chain'] and report['cli']['imports'] > 0
