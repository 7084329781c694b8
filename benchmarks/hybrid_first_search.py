"""Hybrid ranking's first search after `update_index`: vectors computed at index time, the query alone at search.

A chat of one run per exchange (`benchmarks._chat`, about 6,000 messages by default) is written to
a SQLite store and its BM25 index caught up. Each round then runs in a fresh process, on its own
copy of that store, with the local default model (the `semantic` extra's files, offline):

* model load: the process's one-time cost (importing torch and sentence-transformers, reading the
  weights), paid by whichever comes first, `update_index` or a search;
* `update_index(store, ranking='hybrid')`: every message embedded in batches and stored;
* the first hybrid search after it (a new `ConversationSearch`, as a new worker's): reads the
  stored vectors and embeds only its query; then warm searches;
* for comparison, on a second copy without vectors, the first hybrid search as it was before
  vectors were computed at index time: it embeds the whole conversation itself.

    python -m benchmarks.hybrid_first_search [--exchanges 2850] [--rounds 3] [--lazy-rounds 1]

Prints medians over the rounds (and every round's figures); the load average too, since the
machine may be shared. Target: the first search after `update_index` within 1 s (model load aside).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from benchmarks._chat import generate_chat
from benchmarks._measure import write_store
from benchmarks._stores import StoreSpec
from durable_recall import ConversationSearch, SnapshotHistorySource, update_index
from durable_recall.search import SearchRequest
from durable_recall.stores import SqliteStepStore

SEED = 20261205
CONVERSATION = 'bench-hybrid'
QUERIES = (
    'what did we decide about the failing export job',
    'the path of the config file you mentioned',
    'when did I ask about the deployment timeout',
    'remind me which function handles retries',
    'what was the id of that request',
)


def main() -> None:
    """Write the store once, run each round in its own process, print medians."""
    parser = argparse.ArgumentParser(description="hybrid ranking's first search after update_index")
    parser.add_argument('--exchanges', type=int, default=2850, help='runs of the chat (about 2.1 messages each)')
    parser.add_argument('--rounds', type=int, default=3, help='fresh processes, each on its own copy of the store')
    parser.add_argument('--warm', type=int, default=20, help='warm searches per round, after the first')
    parser.add_argument(
        '--lazy-rounds', type=int, default=1, help='rounds that also time a first search without stored vectors'
    )
    parser.add_argument('--round', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.round:
        print(json.dumps(asyncio.run(_round(json.loads(args.round)))))
        return
    with tempfile.TemporaryDirectory(prefix='dr-hybrid-') as work:
        base = Path(work) / 'base.db'
        chat = generate_chat(SEED, args.exchanges, conversation_id=CONVERSATION)
        began = time.perf_counter()
        asyncio.run(write_store(StoreSpec('sqlite', str(base)), [chat], keep=None))
        messages = asyncio.run(_messages(base))
        print(
            f'{messages:,} messages in {args.exchanges:,} runs, written and BM25-indexed in '
            f'{time.perf_counter() - began:.1f} s; load average {os.getloadavg()[0]:.1f}',
            flush=True,
        )
        rounds: list[dict[str, Any]] = []
        for number in range(args.rounds):
            db = Path(work) / f'round{number}.db'
            lazy = Path(work) / f'lazy{number}.db'
            shutil.copy(base, db)
            timed_lazy = number < args.lazy_rounds
            if timed_lazy:
                shutil.copy(base, lazy)
            plan = {'db': str(db), 'lazy': str(lazy) if timed_lazy else None, 'warm': args.warm}
            done = subprocess.run(
                [sys.executable, '-m', 'benchmarks.hybrid_first_search', '--round', json.dumps(plan)],
                check=True,
                capture_output=True,
                text=True,
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result['load'] = os.getloadavg()[0]
            rounds.append(result)
            print(
                f'round {number + 1}: ' + ', '.join(f'{key} {value:.3f}' for key, value in result.items()), flush=True
            )
            db.unlink()
            lazy.unlink(missing_ok=True)
    _report(messages, rounds)


def _report(messages: int, rounds: list[dict[str, Any]]) -> None:
    def median(key: str) -> float:
        return statistics.median(found[key] for found in rounds)

    rows = [
        ('model load (once per process)', 'model_load', 's'),
        ('update_index, embedding every message', 'update_index', 's'),
        ('  of which embedding, per message', 'per_message_ms', 'ms'),
        ('first hybrid search after update_index', 'first_search', 's'),
        ('warm hybrid search, p50', 'warm_p50_ms', 'ms'),
    ]
    lazy = [found['lazy_first_search'] for found in rounds if 'lazy_first_search' in found]
    print(f'\nmedians of {len(rounds)} rounds, {messages:,} messages, load average {median("load"):.1f}:')
    print('| measure | median |\n| --- | --- |')
    for label, key, unit in rows:
        print(f'| {label} | {median(key):,.3f} {unit} |')
    if lazy:
        without = statistics.median(lazy)
        print(f'| first hybrid search without stored vectors (embeds them), {len(lazy)} round(s) | {without:,.3f} s |')
        print(f'first search, without / with index-time vectors: {without / median("first_search"):.1f}x')
    print(f'first search after update_index within 1 s: {"yes" if median("first_search") <= 1 else "NO"}')


async def _messages(path: Path) -> int:
    store = SqliteStepStore(path)
    try:
        status = await store.index_storage().status(CONVERSATION, all_scopes=False)
        return status.docs
    finally:
        await store.aclose()


async def _round(plan: dict[str, Any]) -> dict[str, float]:
    """One fresh process: the model's load, `update_index` with vectors, the first and warm searches."""
    from durable_recall.search._embedding import local_embedder

    began = time.perf_counter()
    await local_embedder()
    result = {'model_load': time.perf_counter() - began}
    store = SqliteStepStore(plan['db'])
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=CONVERSATION)
    try:
        messages = (await store.index_storage().status(CONVERSATION, all_scopes=False)).docs
        began = time.perf_counter()
        await update_index(store, ranking='hybrid')
        result['update_index'] = time.perf_counter() - began
        result['per_message_ms'] = result['update_index'] / messages * 1000
        tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation', ranking='hybrid')
        began = time.perf_counter()
        answer = await tool.search(ctx, SearchRequest(query=QUERIES[0]))
        result['first_search'] = time.perf_counter() - began
        assert '[score:' in answer, answer
        warm: list[float] = []
        for index in range(plan['warm']):
            began = time.perf_counter()
            await tool.search(ctx, SearchRequest(query=QUERIES[index % len(QUERIES)]))
            warm.append(time.perf_counter() - began)
        result['warm_p50_ms'] = statistics.median(warm) * 1000
    finally:
        await store.aclose()
    if plan['lazy'] is not None:
        lazy = SqliteStepStore(plan['lazy'])
        try:
            tool = ConversationSearch(SnapshotHistorySource(lazy), scope='conversation', ranking='hybrid')
            began = time.perf_counter()
            await tool.search(ctx, SearchRequest(query=QUERIES[0]))
            result['lazy_first_search'] = time.perf_counter() - began
        finally:
            await lazy.aclose()
    return result


if __name__ == '__main__':
    main()
