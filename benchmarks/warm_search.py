"""Time only the search again, on a long-runs store that `python -m benchmarks.run --keep` left behind.

Building the medium or large store takes most of an hour on a small machine; the search figures
of a change to ranking or to the answer do not need a new one. This reruns the benchmark's own
measurement (`measure_ours`: fresh processes, the first search cold, then the warm rounds) on the
kept file, with the benchmark's queries (regenerated from the same seed, then cached beside it):

    python -m benchmarks.warm_search benchmarks/.cache/bench-long-runs-medium-XXXX/ours.db --size medium

`--profile PATH` instead runs the warm rounds in this process under cProfile (after one search
that warms it) and writes the stats to PATH (read them with `python -m pstats PATH`).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import tempfile
from dataclasses import replace
from pathlib import Path

from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from benchmarks._long_runs import PLANS, SEED, TARGET
from benchmarks._measure import measure_ours, percentile
from benchmarks._script import generate_conversation, make_queries
from benchmarks._stores import StoreSpec
from durable_recall import ConversationSearch, SnapshotHistorySource
from durable_recall.search import SearchRequest


def _queries(database: Path, size: str) -> list[str]:
    """The queries `benchmarks.run` asked at `size` (cached beside the store: generating takes seconds)."""
    cached = database.with_suffix('.queries.json')
    if cached.exists():
        return json.loads(cached.read_text())
    plan = PLANS[size]
    target = generate_conversation(SEED, plan.target, conversation_id=TARGET)
    queries = make_queries(target, plan.queries, SEED)
    cached.write_text(json.dumps(queries))
    return queries


async def _profile(spec: StoreSpec, queries: list[str], rounds: int, out: str) -> None:
    ctx = RunContext[None](deps=None, model=TestModel(), usage=RunUsage(), conversation_id=TARGET)
    store = spec.open()
    search = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    await search.search(ctx, SearchRequest(query=queries[0]))
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(rounds):
        for query in queries:
            await search.search(ctx, SearchRequest(query=query))
    profiler.disable()
    profiler.dump_stats(out)
    await store.aclose()


def main() -> None:
    """Parse the arguments; print the cold and warm medians (or write the profile)."""
    parser = argparse.ArgumentParser(prog='python -m benchmarks.warm_search', description=__doc__)
    parser.add_argument('database', type=Path, help='the ours.db a kept long-runs benchmark wrote')
    parser.add_argument('--size', choices=sorted(PLANS), default='medium', help='the size it was built at')
    parser.add_argument('--rounds', type=int, help="warm rounds over the queries (default: the size's plan)")
    parser.add_argument(
        '--processes', type=int, help="fresh processes, each timing a cold search (default: the plan's)"
    )
    parser.add_argument('--profile', metavar='PATH', help='profile the warm rounds in this process instead')
    args = parser.parse_args()
    spec = StoreSpec('sqlite', str(args.database))
    queries = _queries(args.database, args.size)
    plan = PLANS[args.size]
    plan = replace(
        plan,
        warm_rounds=args.rounds if args.rounds is not None else plan.warm_rounds,
        cold_processes=args.processes if args.processes is not None else plan.cold_processes,
    )
    if args.profile:
        asyncio.run(_profile(spec, queries, plan.warm_rounds, args.profile))
        return
    with tempfile.TemporaryDirectory() as work:
        timings = measure_ours(spec, TARGET, queries, plan, Path(work))
    warm, cold = timings.warm, timings.cold
    print(
        f'warm p50 {percentile(warm, 50) * 1e3:.2f} ms, p95 {percentile(warm, 95) * 1e3:.2f} ms '
        f'({len(warm)} searches); '
        f'cold p50 {percentile(cold, 50) * 1e3:.2f} ms ({len(cold)} processes); '
        f'imports {percentile(timings.imports, 50) * 1e3:.0f} ms'
    )


if __name__ == '__main__':
    main()
