"""`durable-recall check`: read back everything a step store holds, and say what does not hold up.

Reads never skip what they cannot decode (they raise `CorruptSnapshotError` / `CorruptRunError`),
so a damaged row surfaces the first time something reads it: at a search, perhaps months later.
`check` reads everything now, through the same public reads a search uses, so that what it calls
clean is what a search will find clean:

* on SQLite, every row's column types (a mistyped key drops a row out of reads by key);
* every run row (`list_runs`; a run row that does not decode is named);
* every snapshot of every run, interrupted ones included: its state, time and log ranges decode,
  the ranges assemble as many messages as the row records, every entry they name exists, and
  every body decodes with its CRC-32 intact (a store's reads check all of that per snapshot);
* the log entries no snapshot names (gaps among the named ones, and past the last), read by
  number, so a damaged body is found even where no snapshot would show it;
* the index's pending marks (runs saved since the index read them): each names a run the store
  holds, under its conversation, with snapshots up to the index it records (`stores._pending`);
* the search index against the snapshots (see `_check_index`).

One line per problem (`run <id> snapshot <n>: <what>`), then a summary; exit 1 on any problem.
`--rebuild-index` first empties the index and catches it up from the snapshots again (what the
schema migrations that change the index's format do), so the check then verifies the rebuilt one.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..base import CorruptRunError, CorruptSnapshotError, RunRecord
from ..index import Indexer, SnapshotFeed
from ..stores import PendingMarks, SqliteStepStore, StepStore, pending_mark_problem
from ._check_index import check_index
from ._check_report import Report
from ._output import Progress, count, write_json
from ._store import OpenedStore

__all__ = ('check_store',)

_PROBE = 64
"""Log numbers read at a time past the last one a snapshot names, until a read finds none."""

_BATCH = 256
"""Log numbers read in one `read_messages` call."""


@dataclass
class _Rebuilt:
    marked: int
    caught_up: int
    unreadable: list[str] = field(default_factory=list[str])
    documents: int = 0
    seconds: float = 0.0


async def check_store(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Check the store (and rebuild its index first with `--rebuild-index`); returns 1 on any problem."""
    store = opened.store
    began = time.perf_counter()
    rebuilt = await _rebuild(store) if args.rebuild_index else None
    report = Report()
    await _check_types(store, report)
    records = await _records(store, report)
    enabled = args.progress or (err.isatty() and len(records) > 20)
    with Progress('checking runs', len(records), stream=err, enabled=enabled) as progress:
        for record in records:
            await _check_run(store, record.run_id, report)
            progress.advance()
    await _check_pending(store, report)
    await check_index(store, records, report)
    for (owner, seq), runs in report.inherited.items():
        shown = ', '.join(runs[:3]) + (f' and {len(runs) - 3} more' if len(runs) > 3 else '')
        report.notes.append(
            f'{count(len(runs), "later run")} inherited message {seq} of run {owner} (named above) and cannot read '
            f'it either: {shown}'
        )
    seconds = time.perf_counter() - began
    if args.json:
        write_json(_as_json(opened.label, report, rebuilt, seconds), out)
    else:
        _write_text(opened.label, report, rebuilt, seconds, out)
    return 1 if report.problems else 0


async def _rebuild(store: StepStore) -> _Rebuilt:
    """Empty the index, mark every run with snapshots pending, and catch them all up."""
    began = time.perf_counter()
    storage = store.index_storage()
    marked = await storage.rebuild()
    pending = (await storage.status(None, all_scopes=True)).pending
    problems = await Indexer(storage, SnapshotFeed(store)).catch_up(pending)
    after = await storage.status(None, all_scopes=True)
    return _Rebuilt(
        marked=marked,
        caught_up=len(pending) - len(problems),
        unreadable=[str(problem) for problem in problems],
        documents=after.docs,
        seconds=time.perf_counter() - began,
    )


async def _check_types(store: StepStore, report: Report) -> None:
    """SQLite only: name every row holding a value of another type than its column declares.

    Postgres refuses such values at write; SQLite keeps them, and a mistyped key drops its row
    out of the reads that look it up by key. Reads name most of them, but not a run row listed
    under a conversation id stored as a BLOB, so this scans (see `SqliteStepStore.mistyped_rows`).
    It also names log rows whose run number no run row has (`SqliteStepStore.unowned_log_rows`).
    """
    if isinstance(store, SqliteStepStore):
        for run_id, what in await store.mistyped_rows():
            report.add(run_id, None, what)
        for run, what in await store.unowned_log_rows():
            report.add(run, None, what)


async def _check_pending(store: StepStore, report: Report) -> None:
    """Name pending marks that no catch-up would clear (`stores._pending`); their runs' snapshots are read anyway."""
    if isinstance(store, PendingMarks):
        for mark in await store.pending_marks():
            problem = pending_mark_problem(mark)
            if problem is not None:
                report.add(mark.run_id, None, problem)


async def _records(store: StepStore, report: Report) -> list[RunRecord]:
    """Every run's record, oldest first; a run row that does not decode is named and left out.

    `list_runs` refuses a listing holding a corrupt row as a whole; the runs are then found through
    the index (indexed and pending runs) and read one by one, so the rest still gets checked.
    """
    try:
        return await store.list_runs()
    except CorruptRunError as error:
        report.add(error.run_id, None, error.reason)
    storage = store.index_storage()
    status = await storage.status(None, all_scopes=True)
    run_ids = dict.fromkeys([*status.pending, *(row.run_id for row in await storage.scope_runs(None, all_scopes=True))])
    records: list[RunRecord] = []
    for run_id in run_ids:
        try:
            record = await store.get_run(run_id)
        except CorruptRunError as error:
            report.add(error.run_id, None, error.reason)
            continue
        if record is not None:
            records.append(record)
    report.partial_listing = True  # noted in the report: runs neither indexed nor pending went unseen
    return sorted(records, key=lambda record: (record.started_at, record.run_id))


async def _check_run(store: StepStore, run_id: str, report: Report) -> None:
    """Read every snapshot of the run, then its log entries by number; name each damaged row once.

    A snapshot that does not read because of one log entry is not a problem of its own: the entry
    is, and every later snapshot naming it fails the same way. So the log is read entry by entry
    (all of it when a snapshot failed, else the entries no snapshot names), and each damaged entry
    is named once, with the snapshots it broke. An entry a run inherited is a reference to an
    earlier run's row: its damage is named in that run, where the row is (`_owners`).
    """
    report.runs += 1
    after = -1
    named: set[int] = set()
    indexes: list[int] = []
    failed: list[tuple[int | None, str]] = []
    while True:
        try:
            snapshots = await store.list_snapshots(run_id, include_interrupted=True, after=after)
        except CorruptSnapshotError as error:
            if error.index <= after:  # not one snapshot's fault: the rest cannot be told apart
                failed.append((None, error.reason))
                break
            failed.append((error.index, error.reason))
            report.snapshots += 1
            indexes.append(error.index)
            after = error.index
            continue
        for snapshot in snapshots:
            named.update(snapshot.seqs)
            indexes.append(snapshot.index)
        report.snapshots += len(snapshots)
        break
    whole = not failed
    if indexes:
        report.last_snapshot[run_id] = max(indexes)
    if whole and indexes != list(range(len(indexes))):
        missing = sorted(set(range(max(indexes) + 1)) - set(indexes))
        report.add(
            run_id,
            None,
            f'{"snapshot" if len(missing) == 1 else "snapshots"} {_numbers(missing)} missing: the run skips from one '
            'index to a later one',
        )
    damaged = await _check_log(store, run_id, set() if not whole else named, report)
    entries = {seq for seq in (_entry(reason) for _, reason in failed) if seq is not None} | set(damaged)
    owners = await _owners(store, run_id, sorted(entries))
    for seq, reason in sorted(damaged.items()):
        if _inherited(report, run_id, owners.get(seq), seq):
            continue
        broke = [index for index, why in failed if index is not None and _entry(why) == seq]
        if broke:
            also = f' (snapshots {_numbers(broke[1:])} fail on it too)' if len(broke) > 1 else ''
            report.add(run_id, broke[0], reason + also)
        elif whole:
            report.add(run_id, None, f'log entry {seq}, which no snapshot names: {reason}')
        else:
            report.add(run_id, None, f'log entry {seq}: {reason}')
        report.damaged_entries.add((run_id, seq))
    told: set[str] = set()
    for index, reason in failed:
        seq = _entry(reason)
        if seq is not None and (seq in damaged or _inherited(report, run_id, owners.get(seq), seq)):
            continue
        if reason in told:  # the same fault met again by a later snapshot
            continue
        told.add(reason)
        report.add(run_id, index, reason)


_ENTRY = re.compile(r'message (\d+) of the run log(?::| is missing)')
"""How a store's read names the log entry that failed it (`gather_bodies`)."""


def _entry(reason: str) -> int | None:
    """The log entry a read failed on, from its reason; `None` when the failure is not one entry's."""
    found = _ENTRY.match(reason)
    return None if found is None else int(found.group(1))


async def _owners(store: StepStore, run_id: str, seqs: Sequence[int]) -> dict[int, tuple[str, int]]:
    """Where the entries keep their bodies, for a store that can say (`log_owners`); else nothing."""
    log_owners = getattr(store, 'log_owners', None)
    if not seqs or log_owners is None:
        return {}
    return await log_owners(run_id, seqs)


def _inherited(report: Report, run_id: str, owner: tuple[str, int] | None, seq: int) -> bool:
    """Whether the entry is an earlier run's row whose damage that run's check named already (noted, then)."""
    if owner is None or owner[0] == run_id or owner not in report.damaged_entries:
        return False
    report.inherited.setdefault(owner, []).append(run_id)
    return True


async def _check_log(store: StepStore, run_id: str, named: set[int], report: Report) -> dict[int, str]:
    """Read the log entries the snapshots do not name (gaps among them, and past the last); the damaged ones."""
    report.bodies += len(named)
    damaged: dict[int, str] = {}
    top = max(named, default=-1)
    await _read_entries(store, run_id, [seq for seq in range(top + 1) if seq not in named], report, damaged)
    start = top + 1
    while True:
        found = await _read_entries(store, run_id, list(range(start, start + _PROBE)), report, damaged)
        if not found:
            return damaged
        start += _PROBE


async def _read_entries(
    store: StepStore, run_id: str, seqs: Sequence[int], report: Report, damaged: dict[int, str]
) -> int:
    """Read log entries by number, each failing one put in `damaged`; returns how many exist (damaged ones included)."""
    found = 0
    for begin in range(0, len(seqs), _BATCH):
        batch = seqs[begin : begin + _BATCH]
        try:
            found += len(await store.read_messages(run_id, batch))
        except CorruptSnapshotError:
            for seq in batch:  # one at a time, to name each damaged entry
                try:
                    found += len(await store.read_messages(run_id, [seq]))
                except CorruptSnapshotError as error:
                    found += 1
                    damaged[seq] = error.reason
    report.bodies += found
    return found


def _numbers(values: Sequence[int]) -> str:
    shown = ', '.join(str(value) for value in values[:5])
    return shown + (f' and {len(values) - 5} more' if len(values) > 5 else '')


def _as_json(label: str, report: Report, rebuilt: _Rebuilt | None, seconds: float) -> dict[str, Any]:
    return {
        'store': label,
        'runs': report.runs,
        'snapshots': report.snapshots,
        'message_bodies': report.bodies,
        'indexed_runs': report.indexed_runs,
        'index_terms': report.terms,
        'problems': [
            {'run_id': problem.run_id, 'snapshot': problem.snapshot, 'scope': problem.scope, 'what': problem.what}
            for problem in report.problems
        ],
        'notes': report.notes,
        'rebuilt_index': None
        if rebuilt is None
        else {
            'runs_marked': rebuilt.marked,
            'runs_caught_up': rebuilt.caught_up,
            'unreadable': rebuilt.unreadable,
            'documents': rebuilt.documents,
            'seconds': round(rebuilt.seconds, 3),
        },
        'seconds': round(seconds, 3),
    }


def _write_text(label: str, report: Report, rebuilt: _Rebuilt | None, seconds: float, out: TextIO) -> None:
    if rebuilt is not None:
        out.write(
            f'{label}: rebuilt the search index: emptied it, marked {count(rebuilt.marked, "run")} pending, caught up '
            f'{rebuilt.caught_up} in {rebuilt.seconds:.1f}s; {count(rebuilt.documents, "searchable message")}\n'
        )
    for problem in report.problems:
        out.write(problem.line() + '\n')
    for note in report.notes:
        out.write(f'note: {note}\n')
    verdict = 'no problems' if not report.problems else count(len(report.problems), 'problem')
    out.write(
        f'{label}: checked {count(report.runs, "run")}, {count(report.snapshots, "snapshot")}, '
        f'{count(report.bodies, "message body", "message bodies")}, {count(report.indexed_runs, "indexed run")} and '
        f'{count(report.terms, "index term")} in {seconds:.1f}s: {verdict}\n'
    )
