"""Search, ingest, storage and ranking benchmarks, in one table per run, with targets and why they are missed.

Run from the repo root: `python -m benchmarks.run [--workload long-runs|chat] [--size ...] [--postgres URL]`.

Workloads:

* `long-runs` (the default, `benchmarks._long_runs`): an agent at work, long runs of tool calls
  compacted to a sliding window of 40, next to the reference (pydantic-ai-harness 0.62.0) at the
  small size, with curves of cost against conversation size and against other conversations.
* `chat` (`benchmarks._chat_workload`): a chat app, one run per exchange inheriting the 20 most
  recent messages; the table, and where the store's bytes go table by table.
* `recall` (`benchmarks._recall`): recall quality on a multi-session chat with known evidence
  (`--size tiny|small`): evidence recall@5/@10 and any-hit, ours (per analyzer) and the reference.

Every figure is measured in this run: latencies are medians (p50) and 95th percentiles, ratios
are between figures of the same run. "Cold" is a fresh process: the time from opening the store
to the answer, with module imports reported apart; "warm" is later searches in that process.
Every workload also times the `durable-recall` command's start on the SQLite store it wrote.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from benchmarks import _chat_workload, _long_runs, _recall
from benchmarks._report import Report, describe, describe_rest
from benchmarks._venv import CACHE

WORKLOADS = ('long-runs', 'chat', 'recall')


async def _main(args: argparse.Namespace) -> Report:
    work = Path(tempfile.mkdtemp(prefix=f'bench-{args.workload}-{args.size}-', dir=CACHE if CACHE.exists() else None))
    CACHE.mkdir(parents=True, exist_ok=True)
    setup: dict[str, float] = {}
    try:
        if args.workload == 'chat':
            report = await _chat_workload.measure(args, work, setup)
            print(describe(report), flush=True)
            return report
        # The long runs print their table before measuring the curves, which take a while.
        return await _long_runs.measure(args, work, setup)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


async def _recall_main(args: argparse.Namespace) -> str:
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f'bench-recall-{args.size}-', dir=CACHE))
    try:
        return await _recall.measure_recall(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the workload at its size, print the report."""
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.run', description='Benchmarks, ours next to the reference.'
    )
    parser.add_argument(
        '--workload',
        choices=WORKLOADS,
        default='long-runs',
        help="long-runs: an agent's long runs, window 40 (default); chat: one run per exchange, window 20",
    )
    parser.add_argument(
        '--size',
        choices=sorted(_long_runs.PLANS),
        default='small',
        help='long-runs: messages of the searched conversation (tiny 120, small 1,000, medium and large 100,000); '
        'chat: exchanges (tiny 40, small 3,000, medium 30,000, large 30,000 among ten chats)',
    )
    parser.add_argument('--postgres', metavar='URL', help='also measure PostgresStepStore (a throwaway schema)')
    parser.add_argument('--no-reference', action='store_true', help='skip the reference (no venv needed)')
    parser.add_argument(
        '--no-hybrid', action='store_true', help='recall: skip hybrid ranking (no semantic extra needed)'
    )
    parser.add_argument('--json', metavar='PATH', help='also write the measurements as JSON')
    parser.add_argument(
        '--keep', action='store_true', help='keep the stores (SQLite files in benchmarks/.cache/, the Postgres schema)'
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    if args.workload == 'recall':
        print(asyncio.run(_recall_main(args)), flush=True)
        return
    report = asyncio.run(_main(args))
    report.setup['total_s'] = time.perf_counter() - began
    print(describe_rest(report))
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(report), indent=2, default=str))


if __name__ == '__main__':
    main()
