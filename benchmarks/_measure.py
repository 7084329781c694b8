"""What every workload measures the same way: search timings in fresh processes, ingest, ranking.

A workload (`benchmarks._long_runs`, `benchmarks._chat_workload`) generates its conversations and
decides what to print; the measuring is here, written once, so both workloads' figures mean the
same thing. "Cold" is a fresh process: the time from opening the store to the answer, with module
imports reported apart; "warm" is later searches in that process. Ingest is writing through the
direct writer (as `StepPersistence` writes) plus `update_index`.
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from benchmarks._breakdown import postgres_compacted
from benchmarks._script import Conversation, conversation_to_json
from benchmarks._stores import StoreSize, StoreSpec
from benchmarks.histories import WINDOW, Ingest, write_conversation
from benchmarks.oracle import Oracle, overlap_at
from durable_recall import ConversationSearch, SnapshotHistorySource, StepStore
from durable_recall.history import message_hash
from durable_recall.index import update_index
from durable_recall.search import SearchRequest

__all__ = (
    'ROOT',
    'Sampling',
    'Side',
    'Timings',
    'compacted_size',
    'count_snapshots',
    'drop_schema',
    'ingest_note',
    'log',
    'measure_ours',
    'measure_reference',
    'percentile',
    'ranking_agreement',
    'reference_ingest',
    'run_json',
    'write_store',
)

ROOT = Path(__file__).resolve().parent.parent


class Sampling(Protocol):
    """How many searches a plan times, and how long they may take."""

    @property
    def cold_processes(self) -> int: ...

    @property
    def warm_rounds(self) -> int: ...

    @property
    def warm_budget(self) -> float: ...

    @property
    def cold_timeout(self) -> float: ...

    @property
    def reference_cold(self) -> int: ...

    @property
    def reference_warm(self) -> int: ...


def log(message: str) -> None:
    """Progress on stderr, so stdout holds only the report."""
    print(f'[{time.strftime("%H:%M:%S")}] {message}', file=sys.stderr, flush=True)


# --- measurements ----------------------------------------------------------------------------


@dataclass
class Timings:
    """Latencies of one implementation on one store."""

    cold: list[float] = field(default_factory=list[float])
    warm: list[float] = field(default_factory=list[float])
    imports: list[float] = field(default_factory=list[float])
    rss_peak_kb: list[int] = field(default_factory=list[int])
    rss_imported_kb: list[int] = field(default_factory=list[int])
    timed_out: float | None = None
    total_reported: int | None = None
    warm_cut: bool = False


@dataclass
class Side:
    """Everything measured for one implementation on one backend."""

    label: str
    messages: int = 0
    snapshots: int = 0
    ingest_per_second: float = 0.0
    ingest_note: str = ''
    storage: StoreSize | None = None
    timings: Timings = field(default_factory=Timings)
    overlap: list[float] = field(default_factory=list[float])


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (`q` in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def run_json(command: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """Run a command that prints JSON objects, one a line; the last one, even if it runs past `timeout`.

    `None` when it printed nothing before the timeout.
    """
    # Let measured processes cache bytecode: with PYTHONDONTWRITEBYTECODE set (some machines set it),
    # every cold process would compile the modules its first search imports lazily (pydantic-ai's
    # 1.6 MB price table among them), which is neither side's search.
    env = dict(os.environ if env is None else env)
    env.pop('PYTHONDONTWRITEBYTECODE', None)
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as expired:
        partial = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or '')
        lines = partial.strip().splitlines()
        return {**json.loads(lines[-1]), 'timed_out': timeout} if lines else None
    if done.returncode != 0:
        raise RuntimeError(f'{command[:3]} failed ({done.returncode}):\n{done.stderr[-4000:]}')
    return json.loads(done.stdout.strip().splitlines()[-1])


def _record(timings: Timings, out: dict[str, Any]) -> None:
    timings.cold.append(out['first'])
    timings.warm.extend(out.get('warm', []))
    timings.imports.append(out['import_seconds'])
    timings.rss_peak_kb.append(out['rss_peak_kb'])
    timings.rss_imported_kb.append(out['rss_imported_kb'])
    found = re.search(r' in (\d+) persisted messages', out.get('answer_head', ''))
    if found:
        timings.total_reported = int(found.group(1))


def measure_ours(
    spec: StoreSpec,
    conversation_id: str,
    queries: list[str],
    plan: Sampling,
    work: Path,
    max_cached_runs: int | None = None,
) -> Timings:
    """Cold searches in fresh processes; the first of them also runs the warm rounds."""
    timings = Timings()
    for process in range(plan.cold_processes):
        rotated = queries[process:] + queries[:process]
        path = work / f'queries-{uuid.uuid4().hex[:8]}.json'
        path.write_text(json.dumps(rotated))
        rounds = plan.warm_rounds if process == 0 else 0
        command = [sys.executable, '-m', 'benchmarks._ours', spec.to_json(), conversation_id, str(path), str(rounds)]
        command.append(str(plan.warm_budget))
        if max_cached_runs is not None:
            command.append(str(max_cached_runs))
        out = run_json(command, plan.cold_timeout + (plan.warm_budget * 2 if rounds else 0))
        if out is None:
            timings.timed_out = plan.cold_timeout
            break
        _record(timings, out)
        if out.get('partial'):
            timings.warm_cut = True
    return timings


def measure_reference(
    python: Path, database: Path, conversation_id: str, queries: list[str], plan: Sampling, work: Path
) -> Timings:
    """The reference's search, timed the same way (it caches nothing, so warm costs what cold does)."""
    timings = Timings()
    for process in range(plan.reference_cold):
        rotated = queries[process:] + queries[:process]
        path = work / f'ref-queries-{uuid.uuid4().hex[:8]}.json'
        path.write_text(json.dumps(rotated[: max(plan.reference_warm, 1)]))
        repeats = 1 if process == 0 and plan.reference_warm else 0
        command = [str(python), '-m', 'benchmarks._reference', 'search', '--db', str(database)]
        command += ['--conversation', conversation_id, '--queries', str(path), '--repeats', str(repeats)]
        out = run_json(command, plan.cold_timeout * 10, env=_reference_env())
        if out is None:
            timings.timed_out = plan.cold_timeout * 10
            break
        _record(timings, out)
    return timings


def _reference_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop('VIRTUAL_ENV', None)
    env['PYTHONPATH'] = str(ROOT)
    return env


def reference_ingest(python: Path, database: Path, conversations: Sequence[Conversation], work: Path) -> dict[str, Any]:
    """Replay conversations through the reference's agent stack into its SQLite store."""
    command = [str(python), '-m', 'benchmarks._reference', 'ingest', '--db', str(database)]
    for conversation in conversations:
        path = work / f'script-{conversation.conversation_id}.json'
        path.write_text(json.dumps(conversation_to_json(conversation)))
        command += ['--script', str(path)]
    out = run_json(command, 3600, env=_reference_env())
    assert out is not None
    return out


async def write_store(
    spec: StoreSpec, conversations: Sequence[Conversation], *, keep: str | None, window: int = WINDOW
) -> dict[str, Ingest]:
    """Write conversations with the direct writer (compacted to `window` messages); keeps the history of `keep` only."""
    store = spec.open()
    done: dict[str, Ingest] = {}
    try:
        for conversation in conversations:
            keep_history = conversation.conversation_id == keep
            ingest = await write_conversation(store, conversation, window=window, keep_history=keep_history)
            # Indexing is part of ingest: the first search would otherwise pay it (see `Ingest`).
            began = time.perf_counter()
            await update_index(store, conversation.conversation_id)
            ingest.index_seconds = time.perf_counter() - began
            done[conversation.conversation_id] = ingest
    finally:
        await store.aclose()
    return done


def ingest_note(ingest: Ingest) -> str:
    """The ingest figure's two halves, in messages/s: `(store 2,441, index 958)`."""
    return f'(store {ingest.store_per_second:,.0f}, index {ingest.index_per_second:,.0f})'


def count_snapshots(spec: StoreSpec, conversation_id: str) -> int:
    """Snapshot rows of a conversation's runs."""
    if spec.kind == 'sqlite':
        with sqlite3.connect(spec.target) as conn:
            query = (
                'SELECT COUNT(*) FROM dr_snapshots'
                ' WHERE run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)'
            )
            return conn.execute(query, (conversation_id,)).fetchone()[0]
    import psycopg
    from psycopg import sql

    query = sql.SQL(
        'SELECT COUNT(*) FROM {s}.dr_snapshots'
        ' WHERE run_id IN (SELECT run_id FROM {s}.dr_runs WHERE conversation_id = %s)'
    ).format(s=sql.Identifier(spec.schema or 'public'))
    with psycopg.connect(spec.target) as conn:
        row = conn.execute(query, (conversation_id,)).fetchone()
        return int(row[0]) if row else 0


# --- ranking agreement -----------------------------------------------------------------------

_RUN_NAME = re.compile(r'(?:^\[score: [-\d.]+ \||^  \() ?run: ([^\s|\])]+)')
# A block's header `[score: 9.1 | run: …2c5de84c | 2026-01-12 17:00 UTC]` names its first line's run;
# a line `  (run: …b0ae3684 | 13:57)` names the run of the lines after it (where the run changes).
_HIT_LINE = re.compile(r'^>\[(\d+)\]')


def block_hits(block: str, run_ids: Sequence[str]) -> list[tuple[str, int]]:
    """The `(run id, position)` of each match a rendered block marks (`>`), in the block's order.

    Answers show a long run id shortened (`…` and its end): it is resolved against `run_ids`, the
    runs the search could show. A name no run (or several) ends with resolves to itself.
    """
    found: list[tuple[str, int]] = []
    run = ''
    for line in block.splitlines():
        name = _RUN_NAME.match(line)
        if name is not None:
            run = _resolve(name.group(1), run_ids)
            continue
        hit = _HIT_LINE.match(line)
        if hit is not None:
            found.append((run, int(hit.group(1))))
    return found


def _resolve(name: str, run_ids: Sequence[str]) -> str:
    if not name.startswith('…'):
        return name
    matches = [run_id for run_id in run_ids if run_id.endswith(name[1:])]
    return matches[0] if len(matches) == 1 else name


async def ranking_agreement(
    store: StepStore, conversation: Conversation, truth: Sequence[Any], oracle: Oracle, queries: Sequence[str]
) -> list[float]:
    """overlap@10 of our answers (10 blocks, no context lines) with the oracle, per query."""
    # Every run cached: this measures ranking, not latency (see the warm-cache row for that).
    source = SnapshotHistorySource(store, max_cached_runs=len(conversation.runs) + 1)
    index = {digest: position for position, digest in enumerate(message_hash(message) for message in truth)}
    records: dict[str, Sequence[str]] = {}
    for run in conversation.runs:
        history = await source.run_history(run.run_id)
        if history is not None:
            records[run.run_id] = history.hashes
    search = ConversationSearch(source, scope='conversation', context_lines=0, max_result_bytes=4_000_000)
    ctx = RunContext[None](deps=None, model=TestModel(), usage=RunUsage(), conversation_id=conversation.conversation_id)
    overlaps: list[float] = []
    for query in queries:
        answer = await search.search(ctx, SearchRequest(query=query))
        found: list[int] = []
        body = answer.split('\n\n', 1)[1] if '\n\n' in answer else ''
        for block in body.split('\n\n---\n\n'):
            hits = block_hits(block, list(records))
            if not hits:
                continue
            run_id, position = hits[0]
            hashes = records.get(run_id, ())
            found.append(index.get(hashes[position], -1) if position < len(hashes) else -1)
        overlaps.append(overlap_at(found, oracle.scores(query)))
    return overlaps


def compacted_size(url: str | None, schema: str | None) -> int | None:
    """The Postgres store's size after a `VACUUM FULL` (`None` without one); call after everything else is measured."""
    if url is None or schema is None:
        return None
    log('compacting the Postgres store (VACUUM FULL) to tell dead row versions from live ones')
    return postgres_compacted(url, schema)


def drop_schema(url: str, schema: str) -> None:
    """Drop a throwaway Postgres schema and everything in it."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL('DROP SCHEMA IF EXISTS {} CASCADE').format(sql.Identifier(schema)))
