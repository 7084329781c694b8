"""Compaction inside one long run: what the model sees, what the prompt cache keeps, what search brings back.

Run from the repo root: `python -m benchmarks.compaction [--steps 200] [--repeat 3] [--no-reference]
[--json PATH]`.

One agent run of `--steps` tool calls (`benchmarks._compaction_loop`: realistic command output, step
1's holding a path with a hex id that nothing else holds), then one search for that detail. Run with:

* ours, sliding window: `StepPersistence` on `SqliteStepStore`, `ConversationSearch` and
  `SlidingWindowCompaction(max_messages=40, keep_messages=20)`;
* the reference, sliding window: pydantic-ai-harness 0.62's own `StepPersistence` on its SQLite
  store, its `ConversationSearch` and its `SlidingWindowCompaction` with the same options, in its
  own venv (`benchmarks._venv`, `benchmarks._compaction_reference`);
* ours, clearing: `ToolResultClearing(max_results=20, keep_results=10)` instead of the window; the
  final search uses the query the placeholder of step 1's cleared result names (one call).

Every figure comes from the messages the model was handed at each request, measured by the same
code on both sides (tokens: characters / 4). The deterministic figures are the same in every
repeat; times are medians over `--repeat` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.usage import UsageLimits

from benchmarks._compaction_loop import TASK, Figures, LoopModel, command_tool
from benchmarks._venv import CACHE, REFERENCE, reference_python
from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
    ToolResultClearing,
)

__all__ = ('SIDES', 'Side', 'main', 'measure', 'run_ours')

MAX_MESSAGES, KEEP_MESSAGES = 40, 20
MAX_RESULTS, KEEP_RESULTS = 20, 10
WINDOW = {'max_messages': MAX_MESSAGES, 'keep_messages': KEEP_MESSAGES}
CLEARING = {'max_results': MAX_RESULTS, 'keep_results': KEEP_RESULTS}


@dataclass
class Side:
    """One configuration's repeated runs.

    Attributes:
        label: The table's column heading.
        runs: Each repeat's figures, in order.
        note: Why a side could not run (its column then says n/a).
    """

    label: str
    runs: list[Figures] = field(default_factory=list[Figures])
    note: str = ''

    def median(self, name: str) -> float:
        return statistics.median(float(getattr(run, name)) for run in self.runs)

    def same(self, name: str) -> object:
        """A deterministic figure: the same in every repeat (a difference is reported, not hidden)."""
        values = [getattr(run, name) for run in self.runs]
        return values[0] if all(value == values[0] for value in values) else f'varies {sorted(set(values))}'

    def to_json(self) -> dict[str, Any]:
        return {'label': self.label, 'note': self.note, 'runs': [run.to_json() for run in self.runs]}


def _ours_window() -> AbstractCapability[Any]:
    return SlidingWindowCompaction(max_messages=MAX_MESSAGES, keep_messages=KEEP_MESSAGES)


def _ours_clearing() -> AbstractCapability[Any]:
    return ToolResultClearing(max_results=MAX_RESULTS, keep_results=KEEP_RESULTS)


SIDES: dict[str, Callable[[], AbstractCapability[Any]]] = {
    'ours, SlidingWindowCompaction(40, 20)': _ours_window,
    'ours, ToolResultClearing(20, 10)': _ours_clearing,
}
REFERENCE_LABEL = 'reference, SlidingWindowCompaction(40, 20)'


async def run_ours(steps: int, compaction: AbstractCapability[Any], database: Path) -> Figures:
    """One loop on our capabilities over a fresh SQLite store at `database`; the figures of what the model saw."""
    store = SqliteStepStore(database=database)
    script = LoopModel(steps=steps)
    agent = Agent(
        script.model(),
        name='compaction-bench',
        tools=[command_tool(steps)],
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            compaction,
        ],
    )
    try:
        started, cpu = time.perf_counter(), time.process_time()
        await agent.run(TASK, conversation_id='compaction-bench', usage_limits=UsageLimits(request_limit=None))
        script.meter.figures.wall_s = time.perf_counter() - started
        script.meter.figures.cpu_s = time.process_time() - cpu
    finally:
        await store.aclose()
    return script.meter.figures


def _run_reference(steps: int, database: Path) -> Figures:
    python, _ = reference_python()
    done = subprocess.run(
        [str(python), '-m', 'benchmarks._compaction_reference', '--steps', str(steps), '--db', str(database)]
        + [f'--{key.replace("_", "-")}={value}' for key, value in WINDOW.items()],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f'the reference run failed ({done.returncode}):\n{done.stderr[-4000:]}')
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return Figures(**out['figures'])


async def measure(steps: int, repeat: int, reference: bool, work: Path) -> list[Side]:
    """Run each side `repeat` times, each run on a store of its own under `work`."""
    sides = [Side(label) for label in SIDES]
    if reference:
        sides.insert(1, Side(REFERENCE_LABEL))
    for attempt in range(repeat):
        for side in sides:
            database = work / f'{len(side.runs)}-{sides.index(side)}.db'
            if side.label == REFERENCE_LABEL:
                if side.note:
                    continue
                try:
                    side.runs.append(await asyncio.to_thread(_run_reference, steps, database))
                except (OSError, RuntimeError, subprocess.SubprocessError) as error:
                    side.note = f'the reference did not run: {error}'.splitlines()[0]
                continue
            side.runs.append(await run_ours(steps, SIDES[side.label](), database))
        print(f'  repeat {attempt + 1}/{repeat} done', flush=True)
    return sides


def _yes(value: object) -> str:
    return 'yes' if value is True else 'no' if value is False else str(value)


def _count(value: object) -> str:
    return f'{value:,}' if isinstance(value, int) else str(value)


def _rows(sides: list[Side], steps: int) -> list[list[str]]:
    def each(function: Callable[[Side], str]) -> list[str]:
        return [function(side) if side.runs else 'n/a' for side in sides]

    return [
        ['model requests', *each(lambda s: _count(s.same('requests')))],
        ['peak messages in one request', *each(lambda s: _count(s.same('peak_messages')))],
        ['peak tokens in one request (chars/4)', *each(lambda s: _count(s.same('peak_tokens')))],
        ['  in the loop, before the search answer', *each(lambda s: _count(s.same('peak_loop_tokens')))],
        ['tokens sent over the run (chars/4)', *each(lambda s: _count(s.same('total_tokens')))],
        ['requests whose history head changed', *each(lambda s: _count(s.same('cache_misses')))],
        ['task prompt in every request', *each(lambda s: _yes(s.same('requests_without_task') == 0))],
        ['orphan tool returns sent', *each(lambda s: _count(s.same('orphan_returns')))],
        ['step 1 result cleared in the last view', *each(lambda s: _yes(s.same('step1_cleared')))],
        ['same-run recall of step 1, verbatim', *each(lambda s: _yes(s.same('recall_verbatim')))],
        ['  search answer (chars)', *each(lambda s: _count(s.same('answer_chars')))],
        ['  recall call, median (ms)', *each(lambda s: f'{s.median("recall_ms"):,.1f}')],
        [f'run of {steps} steps, median (s)', *each(lambda s: f'{s.median("wall_s"):,.2f}')],
        ['  CPU time of the run, median (s)', *each(lambda s: f'{s.median("cpu_s"):,.2f}')],
    ]


def _align(header: list[str], rows: list[list[str]]) -> str:
    table = [header, *rows]
    widths = [max(len(row[index]) for row in table) for index in range(len(header))]
    lines = ['  '.join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in table]
    lines.insert(1, '  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def describe(sides: list[Side], steps: int, repeat: int) -> str:
    """The printed report: what ran, the table, the query each side searched with, and any side that could not run."""
    lines = [
        f'compaction inside one run: {steps} tool steps, then one search for what step 1 returned; '
        f'{repeat} repeat(s), times are medians',
        f'machine: {os.cpu_count()} cores, Python {platform.python_version()}; ours: durable-recall '
        f'{version("durable-recall")} on pydantic-ai-slim {version("pydantic-ai-slim")}; reference: {REFERENCE}; '
        f'load average at the end {os.getloadavg()[0]:.1f} (run times are wall clock; CPU time is steadier)',
        '',
        _align(['metric', *(side.label for side in sides)], _rows(sides, steps)),
        '',
    ]
    for side in sides:
        if side.runs:
            lines.append(f'query searched by {side.label}: {side.same("recall_query")!r}')
        if side.note:
            lines.append(f'{side.label}: n/a, {side.note}')
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run every side, print the table and, with `--json`, write the figures."""
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.compaction',
        description='Compaction inside one long run, ours next to the reference.',
    )
    parser.add_argument('--steps', type=int, default=200, help='tool calls in the run (default 200)')
    parser.add_argument('--repeat', type=int, default=3, help='runs of each side; times are medians (default 3)')
    parser.add_argument('--no-reference', action='store_true', help='skip the reference (no venv needed)')
    parser.add_argument('--json', metavar='PATH', help='also write the figures of every run as JSON')
    args = parser.parse_args(argv)
    if args.steps < 2 or args.repeat < 1:
        parser.error('--steps must be at least 2 and --repeat at least 1')
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix='bench-compaction-', dir=CACHE))
    try:
        sides = asyncio.run(measure(args.steps, args.repeat, not args.no_reference, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(describe(sides, args.steps, args.repeat))
    if args.json:
        document = {
            'steps': args.steps,
            'repeat': args.repeat,
            'window': WINDOW,
            'clearing': CLEARING,
            'sides': [side.to_json() for side in sides],
        }
        Path(args.json).write_text(json.dumps(document, indent=2))


if __name__ == '__main__':
    main()
