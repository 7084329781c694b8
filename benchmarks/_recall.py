"""Recall quality: does the answer show the turns that answer a question? Ours next to the reference.

`python -m benchmarks.run --workload recall [--size tiny|small] [--no-reference] [--no-hybrid] [--postgres URL]`.

The chat (`benchmarks._recall_data`) is played through the library as a chat app plays it: one
`Agent.run` per exchange, history threaded through `message_history`, `SlidingWindowCompaction(
max_messages=20)`, `StepPersistence` on a SQLite store; the model is a `FunctionModel` that gives
the scripted reply, and the clock is the script's (sessions days apart), so stored times are
the chat's. Then every question goes to `search_conversation_history` (scope `'conversation'`,
the defaults: 10 matches, 5 context lines, 16,000 bytes) as the model would send it.

Per question, an evidence turn counts as *visible at k* when its text appears in one of the
answer's first k blocks. Reported: evidence recall@5 and @10 (visible evidence turns over all
evidence turns), any-hit (questions with at least one evidence turn anywhere in the answer),
answer bytes, warm search p50, and storage over the raw text. Variants of ours differ in the
analyzer (`plain`: accents folded, no stemming; `porter`; `english`, Snowball's Porter2, the
default) and in context lines (5, the default, and 2); each is the
same store with its index rebuilt by that analyzer. Two seeds: `dev` (the one the default was
chosen on) and `held-out`. Hybrid ranking (`ranking='hybrid'` with the local default model, from the
`semantic` extra) runs on the same store; its first search embeds the whole history, which is
reported apart (the warm p50 is of searches after it), with the bytes its vectors take.
`--postgres URL` also runs the default and hybrid rankings on a `PostgresStepStore` in a throwaway
schema holding the same chat.

The reference (pydantic-ai-harness 0.62.0 in its own venv, `benchmarks._recall_reference`) gets
the same exchanges through its own agent stack and the same questions through its toolset.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import time
import uuid
from collections.abc import Generator, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pydantic_ai._agent_graph as agent_graph
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RunUsage

from benchmarks._measure import drop_schema, log, run_json
from benchmarks._recall_data import RecallChat, generate_recall_chat
from benchmarks._stores import postgres_size, sqlite_size
from benchmarks._venv import reference_python
from durable_recall import (
    ConversationSearch,
    PostgresStepStore,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
    StepStore,
    update_index,
)
from durable_recall.search import SearchRequest
from durable_recall.stores._sqlite_migrations import SQLITE_MIGRATIONS
from durable_recall.text._analyzer import use_analyzer

__all__ = ('RECALL_PLANS', 'measure_recall', 'score_answer')

WINDOW = 20
SEEDS = {'dev': 20260105, 'held-out': 20260611}
ANALYZERS = ('plain', 'porter', 'english')
DEFAULT = 'english'


@dataclass(frozen=True)
class RecallPlan:
    """A size: sessions, exchanges per session, facts per template."""

    sessions: int
    per_session: int
    rounds: int
    warm_rounds: int


RECALL_PLANS = {
    'tiny': RecallPlan(sessions=4, per_session=8, rounds=1, warm_rounds=1),
    'small': RecallPlan(sessions=30, per_session=17, rounds=6, warm_rounds=5),
}


@dataclass
class Scores:
    """One side's figures on one seed."""

    label: str
    evidence: int = 0
    at5: int = 0
    at10: int = 0
    any_hit: int = 0
    questions: int = 0
    answer_bytes: list[int] = field(default_factory=list[int])
    max_answer_bytes: int = 0
    latencies: list[float] = field(default_factory=list[float])
    storage_ratio: float = 0.0
    by_kind: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    first_search: float = 0.0
    """The first question's search: for hybrid, it embeds the whole history (catch-up)."""

    def row(self) -> str:
        p50 = statistics.median(self.latencies) * 1000 if self.latencies else float('nan')
        kinds = ', '.join(f'{kind} {hit}/{total}' for kind, (hit, total) in sorted(self.by_kind.items()))
        return (
            f'| {self.label} | {self.at5 / self.evidence:.3f} | {self.at10 / self.evidence:.3f} | '
            f'{self.any_hit / self.questions:.3f} | {p50:,.2f} ms | {statistics.mean(self.answer_bytes):,.0f} '
            f'(max {self.max_answer_bytes:,}) | {self.storage_ratio:.2f}x | {kinds} |'
        )


def score_answer(answer: str, evidence: Sequence[str]) -> tuple[int, int, int]:
    """Evidence turns visible in the first 5 blocks, the first 10, and anywhere in the answer."""
    blocks = answer.split('\n\n---\n\n')
    keys = [text[:60] for text in evidence]

    def seen(limit: int) -> int:
        shown = '\n'.join(blocks[:limit])
        return sum(1 for key in keys if key in shown)

    return seen(5), seen(10), seen(len(blocks))


@contextmanager
def _clock(moments: Iterator[datetime]) -> Generator[None]:
    """pydantic-ai stamps each request with `now_utc()`: make it the script's time for the replay."""
    original = agent_graph.now_utc  # pyright: ignore[reportPrivateImportUsage]
    agent_graph.now_utc = lambda: next(moments)  # pyright: ignore[reportPrivateImportUsage]
    try:
        yield
    finally:
        agent_graph.now_utc = original  # pyright: ignore[reportPrivateImportUsage]


async def _ingest(path: Path, chat: RecallChat) -> float:
    """Play the chat into a SQLite store as a chat app does; the seconds it took."""
    return await _play(SqliteStepStore(database=path), chat)


async def _play(store: StepStore, chat: RecallChat) -> float:
    """Play the chat into a store as a chat app does (then index it and close the store); the seconds it took."""
    replies = iter(chat.exchanges)
    current: list[datetime] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        exchange = next(replies)
        return ModelResponse(parts=[TextPart(exchange.reply)], timestamp=exchange.at)

    agent = Agent(
        FunctionModel(model),
        name='recall-bench',
        capabilities=[StepPersistence(store=store), SlidingWindowCompaction(max_messages=WINDOW)],
    )
    started = time.perf_counter()

    def moments() -> Iterator[datetime]:
        while True:
            yield current[-1]

    history: list[ModelMessage] | None = None
    with _clock(moments()):
        for exchange in chat.exchanges:
            current.append(exchange.at)
            result = await agent.run(exchange.prompt, message_history=history, conversation_id=chat.conversation_id)
            history = result.all_messages()
    await update_index(store)
    await store.aclose()
    return time.perf_counter() - started


def _rebuild(path: Path, analyzer: str) -> None:
    """Empty the index and mark every run pending, as the version 7 migration does."""
    use_analyzer(analyzer)
    with closing(sqlite3.connect(path)) as conn, conn:
        for statement in SQLITE_MIGRATIONS[6]:
            conn.execute(statement)


def _raw_bytes(chat: RecallChat) -> int:
    return sum(len(e.prompt.encode()) + len(e.reply.encode()) for e in chat.exchanges)


async def _ours(path: Path, chat: RecallChat, label: str, plan: RecallPlan, **options: Any) -> Scores:
    scores = await _searched(SqliteStepStore(database=path), chat, label, plan, **options)
    scores.storage_ratio = path.stat().st_size / _raw_bytes(chat)
    return scores


async def _searched(store: StepStore, chat: RecallChat, label: str, plan: RecallPlan, **options: Any) -> Scores:
    """Every question through the tool (the first pass scored, then warm rounds timed); closes the store."""
    try:
        await update_index(store)
        tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation', **options)
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=chat.conversation_id)
        answers: list[str] = []
        began = time.perf_counter()
        answers.append(await tool.search(ctx, SearchRequest(query=chat.questions[0].text)))
        first = time.perf_counter() - began
        for question in chat.questions[1:]:
            answers.append(await tool.search(ctx, SearchRequest(query=question.text)))
        latencies: list[float] = []
        for _ in range(plan.warm_rounds):
            for question in chat.questions:
                began = time.perf_counter()
                await tool.search(ctx, SearchRequest(query=question.text))
                latencies.append(time.perf_counter() - began)
    finally:
        await store.aclose()
    scores = _score(label, chat, answers)
    scores.latencies = latencies
    scores.first_search = first
    return scores


def _score(label: str, chat: RecallChat, answers: Sequence[str]) -> Scores:
    scores = Scores(label)
    prompts = [exchange.prompt for exchange in chat.exchanges]
    for question, answer in zip(chat.questions, answers, strict=True):
        evidence = [prompts[index] for index in question.evidence]
        at5, at10, anywhere = score_answer(answer, evidence)
        scores.evidence += len(evidence)
        scores.at5 += at5
        scores.at10 += at10
        scores.any_hit += anywhere > 0
        scores.questions += 1
        kind = scores.by_kind.setdefault(question.kind, [0, 0])
        kind[0] += at10
        kind[1] += len(evidence)
        size = len(answer.encode())
        scores.answer_bytes.append(size)
        scores.max_answer_bytes = max(scores.max_answer_bytes, size)
    return scores


def _reference(work: Path, chat: RecallChat, plan: RecallPlan) -> Scores | str:
    """The reference on the same chat, in its own venv; or why it could not run."""
    try:
        python, _ = reference_python()
    except Exception as error:
        return f'reference venv unavailable: {error}'
    script = work / 'recall-chat.json'
    script.write_text(
        json.dumps(
            {
                'conversation_id': chat.conversation_id,
                'exchanges': [[e.prompt, e.reply, e.at.isoformat()] for e in chat.exchanges],
                'questions': [q.text for q in chat.questions],
                'warm_rounds': plan.warm_rounds,
            }
        )
    )
    database = work / 'reference.db'
    command = [str(python), '-m', 'benchmarks._recall_reference', str(script), str(database)]
    env = dict(os.environ)
    env.pop('VIRTUAL_ENV', None)
    env['PYTHONPATH'] = str(Path(__file__).resolve().parent.parent)
    out = run_json(command, 3600, env=env)
    if out is None:
        return 'the reference did not finish'
    scores = _score('reference (harness 0.62)', chat, out['answers'])
    scores.latencies = out['latencies']
    scores.storage_ratio = database.stat().st_size / _raw_bytes(chat)
    return scores


async def measure_recall(args: argparse.Namespace, work: Path) -> str:
    """Run every seed and variant; the report as Markdown."""
    plan = RECALL_PLANS[args.size if args.size in RECALL_PLANS else 'small']
    lines: list[str] = []
    for seed_name, seed in SEEDS.items():
        chat = generate_recall_chat(seed, plan.sessions, plan.per_session, plan.rounds)
        seed_start = len(lines)
        evidence = sum(len(q.evidence) for q in chat.questions)
        lines.append(
            f'\n### seed {seed_name}: {len(chat.exchanges):,} exchanges ({2 * len(chat.exchanges):,} messages) in '
            f'{plan.sessions} sessions, {len(chat.questions)} questions, {evidence} evidence turns\n'
        )
        lines.append('| side | recall@5 | recall@10 | any-hit | warm p50 | answer bytes | storage | @10 by kind |')
        lines.append('| --- | --- | --- | --- | --- | --- | --- | --- |')
        base = work / f'recall-{seed_name}.db'
        log(f'recall: playing {len(chat.exchanges):,} exchanges ({seed_name}) through the agent')
        use_analyzer(DEFAULT)
        await _ingest(base, chat)
        variants: list[tuple[str, str, dict[str, Any]]] = [
            (f'ours, {name}' + (' (default)' if name == DEFAULT else ''), name, {}) for name in ANALYZERS
        ]
        variants.append((f'ours, {DEFAULT}, context_lines=2', DEFAULT, {'context_lines': 2}))
        variants.append((f'ours, {DEFAULT}, BM25 alone (neighbour_weights=())', DEFAULT, {'neighbour_weights': ()}))
        if not args.no_hybrid:
            variants.append(('ours, hybrid (local default)', DEFAULT, {'ranking': 'hybrid'}))
        notes: list[str] = []
        try:
            for label, analyzer, options in variants:
                path = work / f'recall-{seed_name}-{analyzer}.db'
                shutil.copyfile(base, path)
                _rebuild(path, analyzer)
                log(f'recall: {label}')
                scores = await _ours(path, chat, label, plan, **options)
                lines.append(scores.row())
                if options.get('ranking') == 'hybrid':
                    notes.append(_catch_up_note(label, scores, chat, sqlite_size(path).tables.get('dr_vectors')))
        finally:
            use_analyzer(DEFAULT)
        if args.postgres:
            notes += await _postgres_rows(args.postgres, chat, plan, lines, hybrid=not args.no_hybrid)
        if not args.no_reference:
            log('recall: the reference')
            reference = _reference(work, chat, plan)
            lines.append(reference.row() if isinstance(reference, Scores) else f'| reference | {reference} |')
        lines += ['', *notes]
        log('recall: seed ' + seed_name + ' done:\n' + '\n'.join(lines[seed_start:]))
    return '\n'.join(lines)


def _catch_up_note(label: str, scores: Scores, chat: RecallChat, vector_bytes: int | None) -> str:
    messages = 2 * len(chat.exchanges)
    stored = f', vectors {vector_bytes / messages:,.0f} bytes a message' if vector_bytes else ''
    return (
        f'* {label}: the first search embedded the history ({messages:,} messages) in '
        f'{scores.first_search:.1f} s ({scores.first_search / messages * 1000:.1f} ms a message){stored}'
    )


async def _postgres_rows(url: str, chat: RecallChat, plan: RecallPlan, lines: list[str], *, hybrid: bool) -> list[str]:
    """The default and hybrid rankings on a `PostgresStepStore` (a throwaway schema) holding the same chat."""
    schema = f'dr_bench_recall_{uuid.uuid4().hex[:8]}'
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"'.encode())
    notes: list[str] = []
    try:
        log('recall: playing the chat into Postgres')
        await _play(PostgresStepStore(url, schema=schema), chat)
        sides: list[tuple[str, dict[str, Any]]] = [('ours, Postgres, english (default)', {})]
        if hybrid:
            sides.append(('ours, Postgres, hybrid (local default)', {'ranking': 'hybrid'}))
        for label, options in sides:
            log(f'recall: {label}')
            scores = await _searched(PostgresStepStore(url, schema=schema), chat, label, plan, **options)
            size = postgres_size(url, schema)
            scores.storage_ratio = size.total / _raw_bytes(chat)
            lines.append(scores.row())
            if options:
                notes.append(_catch_up_note(label, scores, chat, size.tables.get('dr_vectors')))
    finally:
        drop_schema(url, schema)
    return notes
