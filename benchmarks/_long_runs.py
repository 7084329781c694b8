"""The long-runs workload: an agent at work, long runs compacted to a sliding window of 40.

Sizes:

* `small`: a 1,000-message conversation with sliding-window compaction, alone in its store: the
  head-to-head comparison with the reference (pydantic-ai-harness 0.62.0, installed from PyPI
  into `benchmarks/.cache/` on first use), plus the curves at small sizes.
* `medium`: a 100,000-message conversation next to another 100,000-message conversation.
* `large`: the same 100,000-message conversation in a 1,000,000-message store: the other
  conversation is generated and written once, and copied under new ids (by SQL) to fill the rest.
* `tiny`: seconds, for the smoke test.
"""

from __future__ import annotations

import argparse
import math
import os
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks._breakdown import Breakdown, postgres_breakdown, sqlite_breakdown, storage_reason
from benchmarks._cli_start import CliStart, measure_cli_start
from benchmarks._measure import (
    Side,
    compacted_size,
    count_snapshots,
    drop_schema,
    ingest_note,
    log,
    measure_ours,
    measure_reference,
    percentile,
    ranking_agreement,
    reference_ingest,
    write_store,
)
from benchmarks._report import STORAGE_TARGETS, Report, describe
from benchmarks._script import Conversation, generate_conversation, make_queries, raw_text_bytes
from benchmarks._stores import StoreSpec, clone_conversation, postgres_size, sqlite_size
from benchmarks._venv import reference_python
from benchmarks.histories import WINDOW
from benchmarks.oracle import Oracle

__all__ = ('OTHER', 'PLANS', 'SEED', 'TARGET', 'Plan', 'measure')

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
    cli_samples: int = 5


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
        cli_samples=1,
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


async def measure(args: argparse.Namespace, work: Path, setup: dict[str, float]) -> Report:
    """Generate, write, time and compare at `args.size`; print the table as soon as it is known, then the curves."""
    plan = PLANS[args.size]
    if args.no_reference:
        plan = replace(plan, reference=False, curve_reference_sizes=())
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
    breakdowns: list[Breakdown] = []
    truth: list[Any] = []
    oracle: Oracle | None = None
    cli: CliStart | None = None
    try:
        for spec in specs:
            side = Side(f'ours {spec.label}')
            log(f'writing {store_messages:,} messages into {spec.label} (direct writer, as StepPersistence)')
            began = time.perf_counter()
            written = await write_store(spec, [target, *others], keep=TARGET)
            ingest = written[TARGET]
            side.messages, side.ingest_per_second = ingest.messages, ingest.per_second
            side.ingest_note = ingest_note(ingest)
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
            breakdowns.append(
                sqlite_breakdown(spec.target)
                if spec.kind == 'sqlite'
                else postgres_breakdown(spec.target, spec.schema or '')
            )
            if spec.kind == 'sqlite':
                log('timing the CLI start on the SQLite store')
                cli = measure_cli_start(spec.target, samples=plan.cli_samples)
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
        compacted = compacted_size(args.postgres, schema)

        conversations = 1 + len(others) * (1 + plan.copies)
        store_runs = len(target.runs) + sum(len(other.runs) for other in others) * (1 + plan.copies)
        headline = (
            f'durable-recall benchmark, workload long-runs, size {plan.name}: searching a '
            f'{target.message_count:,}-message conversation ({sides[0].snapshots:,} snapshots, window {WINDOW}) in a '
            f'store of {store_messages:,} messages in {conversations:,} conversation(s); raw message text '
            f'{(raw_target + raw_other) / max(store_messages, 1):,.0f} bytes/message'
        )
        report = Report(
            workload='long-runs',
            size=plan.name,
            headline=headline,
            sides=sides,
            raw_bytes=raw_target + raw_other,
            truth_messages=target.message_count,
            store_messages=store_messages,
            conversations=conversations,
            speed_vs_reference=plan.target < 100_000,
            storage_targets=STORAGE_TARGETS,
            runs=store_runs,
            cli=cli,
            breakdowns=breakdowns,
            reasons={
                'storage / raw message text': storage_reason(
                    breakdowns,
                    raw_bytes=raw_target + raw_other,
                    runs=store_runs,
                    messages=store_messages,
                    compacted=compacted,
                )
            },
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
        if schema is not None and not args.keep:
            drop_schema(args.postgres, schema)
        elif schema is not None:
            log(f'kept Postgres schema {schema!r}')
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
