"""Search, ingest, storage and ranking benchmarks, ours next to the reference, in one table.

Run from the repo root: `python -m benchmarks.run [--size small|medium|large] [--postgres URL]`.

Sizes:

* `small`: a 1,000-message conversation with sliding-window compaction, alone in its store: the
  head-to-head comparison with the reference (pydantic-ai-harness 0.62.0, installed from PyPI
  into `benchmarks/.cache/` on first use), plus the curves at small sizes.
* `medium`: a 100,000-message conversation next to another 100,000-message conversation.
* `large`: the same 100,000-message conversation in a 1,000,000-message store: the other
  conversation is generated and written once, and copied under new ids (by SQL) to fill the rest.

Every figure is measured in this run: latencies are medians (p50) and 95th percentiles, ratios
are between figures of the same run. "Cold" is a fresh process: the time from opening the store
to the answer, with module imports reported apart; "warm" is later searches in that process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from benchmarks._script import (
    Conversation,
    conversation_to_json,
    generate_conversation,
    make_queries,
    raw_text_bytes,
)
from benchmarks._stores import StoreSize, StoreSpec, clone_conversation, postgres_size, sqlite_size
from benchmarks._venv import CACHE, reference_python
from benchmarks.histories import Ingest, write_conversation
from benchmarks.oracle import Oracle, overlap_at
from durable_recall import ConversationSearch, SnapshotHistorySource, StepStore
from durable_recall.history import message_hash
from durable_recall.index import update_index
from durable_recall.search import SearchRequest

ROOT = Path(__file__).resolve().parent.parent
SEED = 20260105
TARGET = 'bench-target'
OTHER = 'bench-other'


@dataclass(frozen=True)
class Plan:
    """What one size measures."""

    name: str
    target: int
    other: int = 0
    copies: int = 0
    queries: int = 24
    warm_rounds: int = 5
    cold_processes: int = 5
    cold_timeout: float = 600.0
    reference: bool = True
    reference_cold: int = 3
    reference_warm: int = 4
    curve_sizes: tuple[int, ...] = ()
    curve_reference_sizes: tuple[int, ...] = ()
    curve_others: tuple[int, ...] = ()
    curve_other_unit: int = 10_000
    curve_cold: int = 3
    curve_queries: int = 8
    warm_budget: float = 120.0


PLANS = {
    'small': Plan(
        'small',
        target=1_000,
        reference_warm=3,
        curve_sizes=(250, 500, 2_000),
        curve_reference_sizes=(250, 500),
        curve_others=(0, 10_000, 100_000),
        curve_cold=2,
    ),
    'medium': Plan(
        'medium',
        target=100_000,
        other=100_000,
        queries=24,
        warm_rounds=1,
        cold_processes=1,
        cold_timeout=1_200.0,
        reference=False,
        curve_sizes=(1_000, 10_000, 30_000),
        curve_others=(0, 10_000, 100_000, 1_000_000),
        curve_cold=2,
    ),
    'tiny': Plan(
        'tiny',
        target=120,
        queries=4,
        warm_rounds=1,
        cold_processes=1,
        reference=False,
        curve_sizes=(60,),
        curve_others=(0, 300, 900),
        curve_other_unit=300,
        curve_cold=1,
        curve_queries=2,
    ),
    'large': Plan(
        'large',
        target=100_000,
        other=100_000,
        copies=8,
        queries=24,
        warm_rounds=1,
        cold_processes=1,
        cold_timeout=1_200.0,
        reference=False,
    ),
}

TARGETS = {
    'speedup': 1000.0,
    'warm_p50_ms': 2.0,
    'cold_p50_ms': 50.0,
    'ingest': 5000.0,
    'storage_ratio': 2.0,
    'overlap': 1.0,
}


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


def _run_json(command: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any] | None:
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
    plan: Plan,
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
        out = _run_json(command, plan.cold_timeout + (plan.warm_budget * 2 if rounds else 0))
        if out is None:
            timings.timed_out = plan.cold_timeout
            break
        _record(timings, out)
        if out.get('partial'):
            timings.warm_cut = True
    return timings


def measure_reference(
    python: Path, database: Path, conversation_id: str, queries: list[str], plan: Plan, work: Path
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
        out = _run_json(command, plan.cold_timeout * 10, env=_reference_env())
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
    out = _run_json(command, 3600, env=_reference_env())
    assert out is not None
    return out


async def write_store(spec: StoreSpec, conversations: Sequence[Conversation], *, keep: str | None) -> dict[str, Ingest]:
    """Write conversations with the direct writer; keeps the history of `keep` only."""
    store = spec.open()
    done: dict[str, Ingest] = {}
    try:
        for conversation in conversations:
            keep_history = conversation.conversation_id == keep
            ingest = await write_conversation(store, conversation, keep_history=keep_history)
            # Indexing is part of ingest: the first search would otherwise pay it (see `Ingest`).
            began = time.perf_counter()
            await update_index(store, conversation.conversation_id)
            ingest.index_seconds = time.perf_counter() - began
            done[conversation.conversation_id] = ingest
    finally:
        await store.aclose()
    return done


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

_BLOCK_HEAD = re.compile(r'^\[score: [-\d.]+ \| run: ([^\s\]]+)', re.MULTILINE)
_HIT_LINE = re.compile(r'^>\[(\d+)\]', re.MULTILINE)


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
            head = _BLOCK_HEAD.search(block)
            hit = _HIT_LINE.search(block)
            if head is None or hit is None:
                continue
            hashes = records.get(head.group(1), ())
            position = int(hit.group(1))
            found.append(index.get(hashes[position], -1) if position < len(hashes) else -1)
        overlaps.append(overlap_at(found, oracle.scores(query)))
    return overlaps


# --- the report ------------------------------------------------------------------------------


def _ms(value: float) -> str:
    if math.isnan(value):
        return 'n/a'
    ms = value * 1000
    return f'{ms:,.2f}' if ms < 10 else f'{ms:,.1f}' if ms < 1000 else f'{ms:,.0f}'


def _int(value: float) -> str:
    return 'n/a' if math.isnan(value) else f'{value:,.0f}'


def _ratio(slow: float, fast: float) -> str:
    if math.isnan(slow) or math.isnan(fast) or fast <= 0:
        return ''
    return f'{slow / fast:,.1f}x' if slow / fast < 100 else f'{slow / fast:,.0f}x'


def _verdict(ok: bool | None, figure: str) -> str:
    if ok is None:
        return ''
    return 'met' if ok else f'MISSED ({figure})'


@dataclass
class Report:
    """The table and the curves, as text and as data."""

    plan: Plan
    sides: list[Side]
    raw_bytes: int
    truth_messages: int
    store_messages: int
    conversations: int
    curve_snapshots: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    curve_others: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    setup: dict[str, float] = field(default_factory=dict[str, float])

    def table(self) -> str:
        ours = self.sides[0]
        reference = next((side for side in self.sides if side.label.startswith('reference')), None)
        columns = [side.label for side in self.sides]
        rows: list[list[str]] = []

        def add(metric: str, values: list[str], ratio: str = '', target: str = '', verdict: str = '') -> None:
            rows.append([metric, *values, ratio, target, verdict])

        def each(function: Callable[[Side], str]) -> list[str]:
            return [function(side) for side in self.sides]

        warm_p50 = [percentile(side.timings.warm, 50) for side in self.sides]
        cold_p50 = [percentile(side.timings.cold, 50) for side in self.sides]
        ref_index = self.sides.index(reference) if reference is not None else None
        small = self.plan.target < 100_000
        speed_target = f'>= {TARGETS["speedup"]:,.0f}x ref' if small and reference else ''
        abs_warm = f'<= {TARGETS["warm_p50_ms"]:g} ms' if not small else ''
        abs_cold = f'<= {TARGETS["cold_p50_ms"]:g} ms' if not small else ''

        def speed(values: list[float], absolute: float) -> tuple[str, str, str]:
            if ref_index is not None:
                ratio = values[ref_index] / values[0] if values[0] > 0 else math.nan
                text = _ratio(values[ref_index], values[0])
                ok = ratio >= TARGETS['speedup'] if small else None
                return text, speed_target, _verdict(ok, text)
            if small:
                return '', '', ''
            ok = values[0] * 1000 <= absolute if not math.isnan(values[0]) else False
            return (
                '',
                (abs_warm if absolute == TARGETS['warm_p50_ms'] else abs_cold),
                _verdict(ok, _ms(values[0]) + ' ms'),
            )

        ratio, target, verdict = speed(warm_p50, TARGETS['warm_p50_ms'])
        add('search p50, warm (ms)', [_ms(value) for value in warm_p50], ratio, target, verdict)
        add('search p95, warm (ms)', each(lambda side: _ms(percentile(side.timings.warm, 95))))
        ratio, target, verdict = speed(cold_p50, TARGETS['cold_p50_ms'])
        cold_values = [
            _ms(value) if not side.timings.timed_out else f'> {side.timings.timed_out:,.0f} s'
            for value, side in zip(cold_p50, self.sides, strict=True)
        ]
        add('search p50, cold process (ms)', cold_values, ratio, target, verdict)
        add('search p95, cold process (ms)', each(lambda side: _ms(percentile(side.timings.cold, 95))))
        add('  samples (warm / cold)', each(lambda side: f'{len(side.timings.warm)} / {len(side.timings.cold)}'))
        add(
            'module imports, cold process (ms)',
            each(lambda side: _ms(statistics.median(side.timings.imports or [math.nan]))),
        )
        ingest_ok = ours.ingest_per_second >= TARGETS['ingest']
        add(
            'ingest (messages/s: stored and indexed)',
            each(lambda side: _int(side.ingest_per_second) + (f' {side.ingest_note}' if side.ingest_note else '')),
            _ratio(ours.ingest_per_second, reference.ingest_per_second) if reference else '',
            f'>= {TARGETS["ingest"]:,.0f}',
            _verdict(ingest_ok, _int(ours.ingest_per_second)),
        )
        add(
            'snapshots written (searched conversation)',
            each(lambda side: _int(side.snapshots) if side.snapshots else 'n/a'),
        )

        def per_message(side: Side) -> str:
            return _int(side.storage.total / self.store_messages) if side.storage else 'n/a'

        def storage_ratio(side: Side) -> float:
            return side.storage.total / self.raw_bytes if side.storage else math.nan

        add('storage (bytes/message, whole store)', each(per_message))
        ours_ratio = storage_ratio(ours)
        add(
            'storage / raw message text',
            each(lambda side: f'{storage_ratio(side):.2f}x' if side.storage else 'n/a'),
            '',
            f'<= {TARGETS["storage_ratio"]:g}x',
            _verdict(ours_ratio <= TARGETS['storage_ratio'], f'{ours_ratio:.2f}x'),
        )
        add(
            'peak RSS, cold search process (MB)',
            each(lambda side: _int(statistics.median(side.timings.rss_peak_kb or [math.nan]) / 1024)),
        )
        add(
            '  growth over imports (MB)',
            each(
                lambda side: _int(
                    statistics.median(
                        [p - i for p, i in zip(side.timings.rss_peak_kb, side.timings.rss_imported_kb, strict=True)]
                        or [math.nan]
                    )
                    / 1024
                )
            ),
        )

        def overlap_text(side: Side) -> str:
            if not side.overlap:
                return 'n/a'
            return f'{statistics.mean(side.overlap):.3f} (min {min(side.overlap):.2f})'

        overlap_ok = bool(ours.overlap) and min(ours.overlap) >= TARGETS['overlap']
        add(
            'overlap@10 vs exact BM25 oracle',
            each(overlap_text),
            '',
            '= 1.0',
            _verdict(overlap_ok, overlap_text(ours)),
        )
        add(
            f'messages searched (truth {self.truth_messages:,})',
            each(lambda side: _int(side.timings.total_reported) if side.timings.total_reported is not None else 'n/a'),
        )
        header = ['metric', *columns, 'ratio', 'target', 'verdict']
        widths = [max(len(row[index]) for row in [header, *rows]) for index in range(len(header))]
        lines = [
            '  '.join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]
        ]
        lines.insert(1, '  '.join('-' * width for width in widths))
        return '\n'.join(lines)

    def curves(self) -> str:
        out: list[str] = []
        if self.curve_snapshots:
            out.append('search cost vs conversation size (snapshots), each conversation alone in its SQLite store:')
            out.append(
                f'  {"messages":>9}  {"snapshots":>9}  {"ours cold p50 ms":>16}  {"ours warm p50 ms":>16}'
                f'  {"reference ms":>12}'
            )
            for point in self.curve_snapshots:
                reference = point.get('reference')
                out.append(
                    f'  {point["messages"]:>9,}  {point["snapshots"]:>9,}'
                    f'  {_ms(point["cold"]):>16}  {_ms(point["warm"]):>16}'
                    f'  {_ms(reference) if reference is not None else "-":>12}'
                )
        if self.curve_others:
            out.append('')
            out.append(
                'search cost vs size of other conversations (searched conversation: '
                f'{self.curve_others[0]["messages"]:,} messages, scope conversation, SQLite):'
            )
            out.append(f'  {"other messages":>14}  {"ours cold p50 ms":>16}  {"ours warm p50 ms":>16}')
            for point in self.curve_others:
                out.append(f'  {point["others"]:>14,}  {_ms(point["cold"]):>16}  {_ms(point["warm"]):>16}')
        return '\n'.join(out)


# --- the run ---------------------------------------------------------------------------------


async def _main(args: argparse.Namespace) -> Report:
    plan = PLANS[args.size]
    if args.no_reference:
        plan = replace(plan, reference=False, curve_reference_sizes=())
    work = Path(tempfile.mkdtemp(prefix=f'bench-{plan.name}-', dir=CACHE if CACHE.exists() else None))
    CACHE.mkdir(parents=True, exist_ok=True)
    setup: dict[str, float] = {}
    try:
        return await _measure(plan, args, work, setup)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


async def _measure(plan: Plan, args: argparse.Namespace, work: Path, setup: dict[str, float]) -> Report:
    started = time.perf_counter()
    log(f'generating the {plan.target:,}-message conversation')
    target = generate_conversation(SEED, plan.target, conversation_id=TARGET)
    others: list[Conversation] = []
    if plan.other:
        log(f'generating the {plan.other:,}-message other conversation')
        others.append(generate_conversation(SEED + 1, plan.other, conversation_id=OTHER))
    queries = make_queries(target, plan.queries, SEED)
    setup['generate_s'] = time.perf_counter() - started
    raw_target = raw_text_bytes(target)
    raw_other = sum(raw_text_bytes(other) for other in others) * (1 + plan.copies)
    store_messages = target.message_count + sum(other.message_count for other in others) * (1 + plan.copies)

    specs = [StoreSpec('sqlite', str(work / 'ours.db'))]
    schema = None
    if args.postgres:
        schema = f'bench_{plan.name}_{os.getpid()}'
        specs.append(StoreSpec('postgres', args.postgres, schema))
    sides: list[Side] = []
    truth: list[Any] = []
    oracle: Oracle | None = None
    try:
        for spec in specs:
            side = Side(f'ours {spec.label}')
            log(f'writing {store_messages:,} messages into {spec.label} (direct writer, as StepPersistence)')
            began = time.perf_counter()
            written = await write_store(spec, [target, *others], keep=TARGET)
            ingest = written[TARGET]
            side.messages, side.ingest_per_second = ingest.messages, ingest.per_second
            side.ingest_note = f'(store {_int(ingest.store_per_second)}, index {_int(ingest.index_per_second)})'
            side.snapshots = count_snapshots(spec, TARGET)
            if plan.copies:
                for other in others:
                    clone_conversation(spec, other.conversation_id, plan.copies)
            setup[f'write_{spec.kind}_s'] = time.perf_counter() - began
            if not truth:
                truth = ingest.history
                log(f'building the oracle over {len(truth):,} messages')
                oracle = Oracle(truth)
            side.storage = (
                sqlite_size(spec.target) if spec.kind == 'sqlite' else postgres_size(spec.target, spec.schema or '')
            )
            log(f'timing our search on {spec.label}')
            side.timings = measure_ours(spec, TARGET, queries, plan, work)
            log(f'ranking agreement on {spec.label}')
            store = spec.open()
            try:
                assert oracle is not None
                side.overlap = await ranking_agreement(store, target, truth, oracle, queries)
            finally:
                await store.aclose()
            sides.append(side)

        report = Report(
            plan=plan,
            sides=sides,
            raw_bytes=raw_target + raw_other,
            truth_messages=target.message_count,
            store_messages=store_messages,
            conversations=1 + len(others) * (1 + plan.copies),
            setup=setup,
        )
        if plan.reference:
            python, created = reference_python()
            setup['reference_venv_s'] = created
            side = Side('reference SQLite')
            database = work / 'reference.db'
            log(f'reference ingest of {target.message_count:,} messages (real agent, harness StepPersistence)')
            out = reference_ingest(python, database, [target], work)
            side.messages = target.message_count
            side.ingest_per_second = target.message_count / out['write_seconds']
            side.ingest_note = '(store time)'
            side.storage = sqlite_size(database)
            with sqlite3.connect(database) as conn:
                side.snapshots = conn.execute('SELECT COUNT(*) FROM snapshots').fetchone()[0]
            log('timing the reference search')
            side.timings = measure_reference(python, database, TARGET, queries, plan, work)
            sides.insert(1, side)
        print(describe(report), flush=True)
        if plan.curve_sizes:
            main_point: dict[str, Any] = {
                'messages': target.message_count,
                'snapshots': sides[0].snapshots,
                'cold': percentile(sides[0].timings.cold, 50),
                'warm': percentile(sides[0].timings.warm, 50),
            }
            if plan.reference:
                main_point['reference'] = percentile(sides[1].timings.cold + sides[1].timings.warm, 50)
            points = await _curve_snapshots(plan, work)
            report.curve_snapshots = sorted([*points, main_point], key=lambda point: point['messages'])
        if plan.curve_others:
            report.curve_others = await _curve_others(plan, work)
    finally:
        if schema is not None:
            _drop_schema(args.postgres, schema)
    return report


def _curve_plan(plan: Plan) -> Plan:
    return Plan(
        'curve',
        target=0,
        warm_rounds=2,
        cold_processes=plan.curve_cold,
        queries=plan.curve_queries,
        cold_timeout=plan.cold_timeout,
    )


async def _curve_snapshots(plan: Plan, work: Path) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    quick = _curve_plan(plan)
    python = reference_python()[0] if plan.curve_reference_sizes else None
    for size in plan.curve_sizes:
        conversation = generate_conversation(SEED + 10 + size, size, conversation_id=f'curve-{size}')
        spec = StoreSpec('sqlite', str(work / f'curve-{size}.db'))
        log(f'curve: {conversation.message_count:,} messages')
        await write_store(spec, [conversation], keep=None)
        curve_queries = make_queries(conversation, quick.queries, SEED)
        timings = measure_ours(spec, conversation.conversation_id, curve_queries, quick, work)
        point: dict[str, Any] = {
            'messages': conversation.message_count,
            'snapshots': count_snapshots(spec, conversation.conversation_id),
            'cold': percentile(timings.cold, 50),
            'warm': percentile(timings.warm, 50),
        }
        if python is not None and size in plan.curve_reference_sizes:
            database = work / f'curve-ref-{size}.db'
            reference_ingest(python, database, [conversation], work)
            one = Plan('curve-ref', target=0, reference_cold=1, reference_warm=1, cold_timeout=plan.cold_timeout)
            ref = measure_reference(python, database, conversation.conversation_id, curve_queries, one, work)
            point['reference'] = percentile(ref.cold + ref.warm, 50)
        points.append(point)
        os.remove(spec.target)
    return points


async def _curve_others(plan: Plan, work: Path) -> list[dict[str, Any]]:
    quick = _curve_plan(plan)
    target = generate_conversation(SEED, min(plan.target, 1_000), conversation_id=TARGET)
    filler = generate_conversation(SEED + 2, plan.curve_other_unit, conversation_id=OTHER)
    spec = StoreSpec('sqlite', str(work / 'curve-others.db'))
    log(f'curve: other conversations, units of {filler.message_count:,} messages')
    await write_store(spec, [target], keep=None)
    queries = make_queries(target, quick.queries, SEED)
    points: list[dict[str, Any]] = []
    copies = 0
    for others in plan.curve_others:
        if others and copies == 0:
            await write_store(spec, [filler], keep=None)
            copies = 1
        wanted = math.ceil(others / filler.message_count) if others else 0
        if wanted > copies:
            clone_conversation(spec, OTHER, wanted - copies, first=copies)
            copies = wanted
        log(f'curve: {copies * filler.message_count:,} messages in other conversations')
        timings = measure_ours(spec, TARGET, queries, quick, work)
        points.append(
            {
                'messages': target.message_count,
                'others': copies * filler.message_count,
                'cold': percentile(timings.cold, 50),
                'warm': percentile(timings.warm, 50),
            }
        )
    return points


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL('DROP SCHEMA IF EXISTS {} CASCADE').format(sql.Identifier(schema)))


def describe(report: Report) -> str:
    """The whole printed report."""
    plan = report.plan
    ours = report.sides[0]
    lines = [
        f'durable-recall benchmark, size {plan.name}: searching a {report.truth_messages:,}-message conversation '
        f'({ours.snapshots:,} snapshots, window {40}) in a store of {report.store_messages:,} messages in '
        f'{report.conversations:,} conversation(s); raw message text '
        f'{report.raw_bytes / max(report.store_messages, 1):,.0f} bytes/message',
        f'machine: {os.cpu_count()} cores, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}; '
        'p50/p95 over the samples counted below; ratios are reference/ours from this run',
        '',
        report.table(),
    ]
    table = lines[-1]
    missed = [
        f'  {metric}: {reason}'
        for metric, reason in MISSED_BECAUSE.items()
        if any(row.startswith(metric) and 'MISSED' in row for row in table.splitlines())
    ]
    if missed:
        lines += ['', 'why a target is missed:', *missed]
    return '\n'.join(lines)


MISSED_BECAUSE = {
    'search p50, warm': 'a query whose words are all common adds a BM25 share for every message holding each of '
    'them, in Python (MaxScore pruning helps once a rarer word has found the top answers); then the messages the '
    'answer shows are read back, decoded (~70 us each through pydantic) and rendered',
    'search p50, cold process': 'besides the postings, the first search of a process opens the database, reads back '
    'and decodes the messages its answer shows (~70 us each through pydantic) and renders them; on Postgres it also '
    'opens the connection pool, and every read is a network round trip',
    'ingest': 'catching a run up reads back, decodes and hashes again the history it inherited (a compaction window '
    'per run: ~0.3 ms a message) before it folds and tokenizes what is new; the store alone writes ~2,400 messages/s',
    'storage / raw message text': 'postings share rows (an open tail and packed chunks per word and conversation), '
    'but each rare word (an id, a number, a path) still takes a row of its own, ~25 bytes of key and cell overhead '
    'for a posting or two; on Postgres a row also pays a tuple header and a B-tree entry',
}
"""Why each target is missed where it is, printed under the table (the README says more)."""


def describe_rest(report: Report) -> str:
    """What follows the table once the curves are measured: the curves and the setup times."""
    lines: list[str] = []
    if report.curve_snapshots or report.curve_others:
        lines += ['', report.curves()]
    setup = ', '.join(f'{key} {value:.1f}' for key, value in report.setup.items())
    lines += ['', f'setup (s): {setup}']
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the plan, print the report."""
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.run', description='Benchmarks, ours next to the reference.'
    )
    parser.add_argument('--size', choices=sorted(PLANS), default='small')
    parser.add_argument('--postgres', metavar='URL', help='also measure PostgresStepStore (a throwaway schema)')
    parser.add_argument('--no-reference', action='store_true', help='skip the reference (no venv needed)')
    parser.add_argument('--json', metavar='PATH', help='also write the measurements as JSON')
    parser.add_argument('--keep', action='store_true', help='keep the stores in benchmarks/.cache/')
    args = parser.parse_args(argv)
    began = time.perf_counter()
    report = asyncio.run(_main(args))
    report.setup['total_s'] = time.perf_counter() - began
    print(describe_rest(report))
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(report), indent=2, default=str))


if __name__ == '__main__':
    main()
