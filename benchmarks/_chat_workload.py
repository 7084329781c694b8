"""The chat workload: one run per exchange, each inheriting a window of the 20 most recent messages.

A chat app calls `Agent.run` once per user message with the recent history as `message_history`
(`benchmarks._chat`), so its store holds many small runs, each adding two messages (four with a
tool call) on top of twenty inherited ones. What a run costs whatever its size (its registration,
its snapshots, references to the messages it inherited, its index row and fold state) is paid
about once per two messages here, against once per hundreds in the long-runs workload: this
workload measures that, and prints where the bytes go, table by table.

Sizes (exchanges of the searched chat):

* `tiny`: 40, for the smoke test (seconds);
* `small` (the default): 3,000, about 6,300 messages and 0.8 MB of text;
* `medium`: 30,000;
* `large`: the 30,000-exchange chat in a store of ten (nine copies under new ids, by SQL).

Targets: storage at most 2x the raw message text on SQLite and 2.5x on Postgres, search within
2 ms warm and 50 ms cold, ingest at 5,000 messages/s, the exact BM25 ranking, and a CLI start
within 0.3 s. The reference is not run: its search reads every snapshot of a conversation, and a
chat writes thousands.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks._breakdown import Breakdown, postgres_breakdown, sqlite_breakdown, storage_reason
from benchmarks._chat import CHAT_WINDOW, TOOL_SHARE, generate_chat
from benchmarks._cli_start import CliStart, measure_cli_start
from benchmarks._measure import (
    Side,
    compacted_size,
    count_snapshots,
    drop_schema,
    ingest_note,
    log,
    measure_ours,
    ranking_agreement,
    write_store,
)
from benchmarks._report import STORAGE_TARGETS, Report
from benchmarks._script import make_queries, raw_text_bytes
from benchmarks._stores import StoreSpec, clone_conversation, postgres_size, sqlite_size
from benchmarks.oracle import Oracle

__all__ = ('CHAT_PLANS', 'ChatPlan', 'measure')

SEED = 20260105
TARGET = 'bench-chat'


@dataclass(frozen=True)
class ChatPlan:
    """What one size of the chat workload measures."""

    name: str
    exchanges: int
    copies: int = 0
    queries: int = 24
    warm_rounds: int = 5
    cold_processes: int = 5
    cold_timeout: float = 600.0
    warm_budget: float = 120.0
    reference_cold: int = 0
    reference_warm: int = 0
    cli_samples: int = 5


CHAT_PLANS = {
    'tiny': ChatPlan('tiny', exchanges=40, queries=4, warm_rounds=1, cold_processes=1, cli_samples=1),
    'small': ChatPlan('small', exchanges=3_000),
    'medium': ChatPlan('medium', exchanges=30_000, warm_rounds=2, cold_processes=3),
    'large': ChatPlan('large', exchanges=30_000, copies=9, warm_rounds=2, cold_processes=3, cold_timeout=1_200.0),
}


async def measure(args: argparse.Namespace, work: Path, setup: dict[str, float]) -> Report:
    """Generate the chat, write it into each store, time and check its search, and break its storage down."""
    plan = CHAT_PLANS[args.size]
    started = time.perf_counter()
    log(f'generating a {plan.exchanges:,}-exchange chat')
    chat = generate_chat(SEED, plan.exchanges, conversation_id=TARGET)
    queries = make_queries(chat, plan.queries, SEED)
    setup['generate_s'] = time.perf_counter() - started
    raw = raw_text_bytes(chat) * (1 + plan.copies)
    store_messages = chat.message_count * (1 + plan.copies)

    specs = [StoreSpec('sqlite', str(work / 'chat.db'))]
    schema = None
    if args.postgres:
        schema = f'bench_chat_{plan.name}_{os.getpid()}'
        specs.append(StoreSpec('postgres', args.postgres, schema))
    sides: list[Side] = []
    breakdowns: list[Breakdown] = []
    oracle: Oracle | None = None
    cli: CliStart | None = None
    try:
        for spec in specs:
            side = Side(f'ours {spec.label}')
            log(f'writing {chat.message_count:,} messages in {len(chat.runs):,} runs into {spec.label}')
            began = time.perf_counter()
            ingest = (await write_store(spec, [chat], keep=TARGET, window=CHAT_WINDOW))[TARGET]
            side.messages, side.ingest_per_second = ingest.messages, ingest.per_second
            side.ingest_note = ingest_note(ingest)
            side.snapshots = count_snapshots(spec, TARGET)
            if plan.copies:
                log(f'copying the chat {plan.copies} times')
                clone_conversation(spec, TARGET, plan.copies)
            setup[f'write_{spec.kind}_s'] = time.perf_counter() - began
            if oracle is None:
                log(f'building the oracle over {len(ingest.history):,} messages')
                oracle = Oracle(ingest.history)
            if spec.kind == 'sqlite':
                side.storage = sqlite_size(spec.target)
                breakdowns.append(sqlite_breakdown(spec.target))
                log('timing the CLI start on the SQLite store')
                cli = measure_cli_start(spec.target, samples=plan.cli_samples)
            else:
                side.storage = postgres_size(spec.target, spec.schema or '')
                breakdowns.append(postgres_breakdown(spec.target, spec.schema or ''))
            log(f'timing our search on {spec.label}')
            side.timings = measure_ours(spec, TARGET, queries, plan, work)
            log(f'ranking agreement on {spec.label}')
            store = spec.open()
            try:
                side.overlap = await ranking_agreement(store, chat, ingest.history, oracle, queries)
            finally:
                await store.aclose()
            sides.append(side)
        compacted = compacted_size(args.postgres, schema)
    finally:
        if schema is not None and not args.keep:
            drop_schema(args.postgres, schema)
        elif schema is not None:
            log(f'kept Postgres schema {schema!r}')

    runs = len(chat.runs)
    conversations = 1 + plan.copies
    headline = (
        f'durable-recall benchmark, workload chat, size {plan.name}: searching a {runs:,}-exchange chat '
        f'({chat.message_count:,} messages, {sides[0].snapshots:,} snapshots; one run per exchange inheriting a '
        f'window of {CHAT_WINDOW}, {TOOL_SHARE:.0%} of exchanges with a tool call) in a store of '
        f'{store_messages:,} messages in {conversations:,} conversation(s); raw message text '
        f'{raw / max(store_messages, 1):,.0f} bytes/message ({raw / 1e6:,.2f} MB)'
    )
    per_run = chat.message_count / max(runs, 1)
    reasons = {
        'storage / raw message text': storage_reason(
            breakdowns, raw_bytes=raw, runs=runs * conversations, messages=store_messages, compacted=compacted
        ),
        'ingest': (
            f'each run adds {per_run:.1f} messages on top of up to {CHAT_WINDOW} inherited ones, and pays what any run '
            'pays: a committed write (its registration with its first snapshot; on SQLite a sync of the file), a '
            'snapshot at its end, and at catch-up about 1 ms of Python a run: reading its snapshot rows and log '
            "(with 63 other runs' in one read), "
            'folding them (the inherited window is decoded and hashed once per catch-up, not per run), hashing and '
            'tokenizing what is new, and writing its index row'
        ),
    }
    return Report(
        workload='chat',
        size=plan.name,
        headline=headline,
        sides=sides,
        raw_bytes=raw,
        truth_messages=chat.message_count,
        store_messages=store_messages,
        conversations=conversations,
        speed_vs_reference=False,
        storage_targets=STORAGE_TARGETS,
        runs=runs * conversations,
        cli=cli,
        breakdowns=breakdowns,
        reasons=reasons,
        setup=setup,
    )
