"""Every performance target (docs/performance.md) in one command: small (with the reference), large, and chat.

Run from the repo root: `python -m benchmarks.suite [--postgres URL] [--large large|medium]
[--markdown PATH]`. It runs, one after the other in this process, the long-runs workload at
`small` (a 1,000-message conversation, next to the reference, pydantic-ai-harness 0.62, with the
curves), the long-runs workload at `large` (a 100,000-message conversation in a store of a
million messages; `--large medium` measures the same conversation beside one other of 100,000,
in a fraction of the time), and the chat workload at `small` (3,000 exchanges), each on SQLite
and, with `--postgres`, on Postgres. Each prints its own report as it finishes (`benchmarks.run`
prints the same); then a summary gives every target's verdict per workload, met or missed with
the measured figure, and `--markdown` writes all of it as the tables of docs/performance.md,
so that every figure there comes from one run of the final code.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks import _chat_workload, _long_runs
from benchmarks._report import Report, describe, describe_rest, missed_reasons
from benchmarks._venv import CACHE

__all__ = ('main', 'markdown')

_RUNS = (('long-runs', 'small', True), ('long-runs', None, False), ('chat', 'small', False))
"""(workload, size, with the reference): the size `None` is `--large`."""


async def _run(workload: str, size: str, reference: bool, postgres: str | None) -> Report:
    args = argparse.Namespace(
        workload=workload, size=size, postgres=postgres, no_reference=not reference, keep=False, json=None
    )
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f'suite-{workload}-{size}-', dir=CACHE))
    setup: dict[str, float] = {}
    began = time.perf_counter()
    try:
        if workload == 'chat':
            report = await _chat_workload.measure(args, work, setup)
            print(describe(report), flush=True)
        else:
            report = await _long_runs.measure(args, work, setup)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.setup['total_s'] = time.perf_counter() - began
    print(describe_rest(report), flush=True)
    return report


def _cells(report: Report) -> tuple[list[str], list[list[str]]]:
    """The report's table without the columns that are empty in every row."""
    header, rows = report.rows()
    keep = [index for index in range(len(header)) if index == 0 or any(row[index] for row in rows)]
    return [header[index] for index in keep], [[row[index] for index in keep] for row in rows]


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells: list[str]) -> str:
        return '| ' + ' | '.join(cell.strip().replace('|', '/') for cell in cells) + ' |'

    return [line(header), line(['---'] * len(header)), *(line(row) for row in rows)]


def summary(reports: list[Report]) -> list[tuple[str, list[str]]]:
    """`(target, verdict per report)` for every metric with a target in any report, in table order."""
    order: list[str] = []
    verdicts: dict[str, list[str]] = {}
    for at, report in enumerate(reports):
        _, rows = report.rows()
        for row in rows:
            metric, target, verdict = row[0], row[-2], row[-1]
            if not target:
                continue
            key = f'{metric}: {target}'
            if key not in verdicts:
                order.append(key)
                verdicts[key] = [''] * len(reports)
            verdicts[key][at] = verdict
    return [(key, verdicts[key]) for key in order]


def _title(report: Report) -> str:
    return f'{report.workload} {report.size}'


def markdown(reports: list[Report], elapsed: float, command: str) -> str:
    """docs/performance.md's tables: the verdicts, then each run's table and why its misses are missed."""
    when = datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')
    load = ', '.join(f'{value:.1f}' for value in os.getloadavg())
    out = [
        f'`{command}` on {when}: {os.cpu_count()} cores, Python {platform.python_version()}, '
        f'SQLite {sqlite3.sqlite_version}, load average at the end {load}; {elapsed / 60:.0f} minutes.',
        '',
    ]
    out += _markdown_table(
        ['target', *(_title(report) for report in reports)],
        [[key, *cells] for key, cells in summary(reports)],
    )
    for report in reports:
        out += ['', f'**{_title(report)}.** {report.headline}', '']
        out += _markdown_table(*_cells(report))
        missed = missed_reasons(report)
        if missed:
            out += ['', 'Why a target is missed:', '']
            out += [f'* {metric}: {reason}' for metric, reason in missed]
        if report.curve_snapshots or report.curve_others:
            out += ['', '```', report.curves(), '```']
    return '\n'.join(out) + '\n'


def main(argv: list[str] | None = None) -> None:
    """Run the three workloads, print the summary, write the markdown if asked."""
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.suite',
        description='Every performance target: small (with the reference), large and chat.',
    )
    parser.add_argument('--postgres', metavar='URL', help='also measure PostgresStepStore (throwaway schemas)')
    parser.add_argument(
        '--large',
        choices=('large', 'medium'),
        default='large',
        help='the 100,000-message conversation in a store of a million (large) or of 200,000 (medium)',
    )
    parser.add_argument('--markdown', metavar='PATH', help='write the tables as markdown (docs/performance.md)')
    parser.add_argument(
        '--tiny', action='store_true', help='every workload at its tiny size, without the reference (a smoke test)'
    )
    args = parser.parse_args(argv)
    began = time.perf_counter()
    reports: list[Report] = []
    runs = [('long-runs', 'tiny', False), ('chat', 'tiny', False)] if args.tiny else _RUNS
    for workload, size, reference in runs:
        reports.append(asyncio.run(_run(workload, size or args.large, reference, args.postgres)))
    elapsed = time.perf_counter() - began
    print('\nevery target, per workload:')
    for key, cells in summary(reports):
        print(f'  {key}')
        for report, cell in zip(reports, cells, strict=True):
            if cell:
                print(f'    {_title(report)}: {cell}')
    if args.markdown:
        command = 'python -m benchmarks.suite' + (' --postgres URL' if args.postgres else '')
        command += '' if args.large == 'large' else f' --large {args.large}'
        command += ' --tiny' if args.tiny else ''
        Path(args.markdown).write_text(markdown(reports, elapsed, command))
        print(f'\nwrote {args.markdown}')


if __name__ == '__main__':
    main()
