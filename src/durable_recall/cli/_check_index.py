"""The search index against the snapshots: does it hold what a fresh catch-up of them would?

The index is derived data, and catch-up is deterministic: the same snapshots, folded in the same
order, give the same rows. So the check builds a second index from nothing, in memory
(`MemoryIndex`, the reference implementation of the same port), by catching every run up from the
store's own snapshots (same feed, same log numbers), oldest first as searches do, and compares:

* each indexed run's row: `seen`, `first`, the per-position arrays (lengths, log numbers, roles,
  times), the fold state, the start time, and that one scope key means one conversation;
* each scope's postings, term by term (every term either index holds), grouped by run: each
  `(term, position)` with its tf and document length;
* each scope's statistics (documents and their total length), which BM25's idf and average length
  come from.

Runs the stored index has not read to the end yet (pending: the next search catches them up) and
runs whose snapshots do not read (reported already) are left out of the comparison, and so are
the statistics of their scopes. The inheritance hashes have no read in the port and are not
compared; a rebuild rewrites them with the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import RunRecord, format_timestamp
from ..index import (
    IndexedRunRow,
    Indexer,
    IndexStorage,
    PostingsRow,
    SnapshotFeed,
    decode_chunk,
    decode_floats,
    decode_ints,
)
from ..stores import MemoryIndex, StepStore
from ._check_report import Report
from ._output import count

__all__ = ('check_index',)

_TERMS = 500
"""Terms whose postings are read in one call."""

_Postings = dict[str, dict[tuple[str, int], tuple[int, int]]]
"""run id -> (term, position) -> (tf, document length)."""


async def check_index(store: StepStore, records: Sequence[RunRecord], report: Report) -> None:
    """Compare the store's index with a fresh catch-up of every run into an in-memory index."""
    storage = store.index_storage()
    order = {record.run_id: (format_timestamp(record.started_at), record.run_id) for record in records}
    conversations = {record.run_id: record.conversation_id for record in records}
    fresh = MemoryIndex(run_order=order.get)
    for record in records:
        last = report.last_snapshot.get(record.run_id)
        if last is not None:
            fresh.mark_pending(record.run_id, record.conversation_id, last)
    unreadable = await Indexer(fresh, SnapshotFeed(store)).catch_up((await fresh.status(None, all_scopes=True)).pending)
    pending = set((await storage.status(None, all_scopes=True)).pending)
    skipped = pending | _after_unreadable({problem.run_id for problem in unreadable}, records)

    listed = await storage.scope_runs(None, all_scopes=True)
    stored = await storage.load_runs([row.run_id for row in listed])
    ours = await fresh.load_runs(list(order))
    report.indexed_runs = len(stored)
    scope_of: dict[int, str | None] = {}
    for run_id, row in stored.items():
        if run_id not in order:
            report.index(run_id, 'indexed, but the store holds no such run (or its record does not read)')
            continue
        held = scope_of.setdefault(row.scope_key, conversations[run_id])
        if held != conversations[run_id]:
            report.index(run_id, f'filed under the scope of conversation {held!r}, not its own')
        if run_id in skipped:
            continue
        mine = ours.get(run_id)
        if mine is None:
            report.index(run_id, 'indexed, but a fresh catch-up of its snapshots indexes nothing')
            continue
        differences = _row_differences(row, mine)
        if differences:
            report.index(run_id, 'index row differs from a fresh catch-up: ' + '; '.join(differences))
    for run_id in ours:
        if run_id not in stored and run_id not in skipped:
            report.index(run_id, 'has snapshots, but is neither indexed nor marked pending: searches never see it')

    by_key = {row.run_key: run_id for run_id, row in stored.items()}
    fresh_by_key = {row.run_key: run_id for run_id, row in ours.items()}
    for conversation_id in dict.fromkeys(conversations[run_id] for run_id in ours):
        scope_runs = {run_id for run_id in ours if conversations[run_id] == conversation_id}
        await _compare_scope(storage, fresh, conversation_id, (by_key, fresh_by_key), scope_runs - skipped, report)
        if not scope_runs & skipped:
            await _compare_statistics(storage, fresh, conversation_id, report)
    if skipped:
        report.notes.append(
            f'{len(skipped)} {"run" if len(skipped) == 1 else "runs"} not compared with the index: pending '
            '(`durable-recall index` catches them up), unreadable, or after an unreadable run of its conversation'
        )
    if report.partial_listing:
        report.notes.append('the run listing did not decode: runs were found through the index instead')


def _after_unreadable(unreadable: set[str], records: Sequence[RunRecord]) -> set[str]:
    """The unreadable runs, and every later run of their conversations (`records` oldest first).

    A run's index row depends on the runs before it in its conversation (what it inherited is
    indexed under them), so a fresh catch-up that could not read one indexes the later ones
    differently: comparing those would name runs that are not damaged.
    """
    left_out = set(unreadable)
    broken: set[str | None] = set()
    for record in records:
        if record.run_id in unreadable:
            broken.add(record.conversation_id)
        elif record.conversation_id in broken and record.conversation_id is not None:
            left_out.add(record.run_id)
    return left_out


def _row_differences(row: IndexedRunRow, mine: IndexedRunRow) -> list[str]:
    """What of a stored index row differs from the fresh one, field by field."""
    found: list[str] = []
    for name in ('seen', 'first', 'started_at'):
        if getattr(row, name) != getattr(mine, name):
            found.append(f'{name} {getattr(row, name)!r}, fresh {getattr(mine, name)!r}')
    for name, decode in (
        ('lengths', decode_ints),
        ('seqs', decode_ints),
        ('roles', decode_ints),
        ('times', decode_floats),
    ):
        try:
            values: list[Any] = list(decode(getattr(row, name)))
        except ValueError as error:
            found.append(f'{name} do not decode ({error})')
            continue
        expected: list[Any] = list(decode(getattr(mine, name)))
        if values != expected:
            found.append(f'{name} {_clip(values)}, fresh {_clip(expected)}')
    if row.state != mine.state:
        found.append(f'fold state differs ({len(row.state)} bytes, fresh {len(mine.state)})')
    return found


def _clip(values: list[Any]) -> str:
    shown = ', '.join(repr(value) for value in values[:8])
    return f'[{shown}{", ..." if len(values) > 8 else ""}] ({len(values)} values)'


async def _compare_scope(
    storage: IndexStorage,
    fresh: MemoryIndex,
    conversation_id: str | None,
    keys: tuple[dict[int, str], dict[int, str]],
    compared: set[str],
    report: Report,
) -> None:
    """Compare a scope's postings, run by run, for the runs in `compared`."""
    terms = sorted(
        set(await storage.terms(conversation_id, all_scopes=False))
        | set(await fresh.terms(conversation_id, all_scopes=False))
    )
    report.terms += len(terms)
    theirs: _Postings = {}
    mine: _Postings = {}
    for start in range(0, len(terms), _TERMS):
        batch = terms[start : start + _TERMS]
        stored_rows = await storage.postings(batch, conversation_id, all_scopes=False)
        fresh_rows = await fresh.postings(batch, conversation_id, all_scopes=False)
        _gather(stored_rows, keys[0], theirs, conversation_id, report)
        _gather(fresh_rows, keys[1], mine, conversation_id, None)
    for run_id in sorted(compared):
        stored, expected = theirs.get(run_id, {}), mine.get(run_id, {})
        if stored == expected:
            continue
        missing = [key for key in expected if key not in stored]
        extra = [key for key in stored if key not in expected]
        other = [key for key in expected if key in stored and stored[key] != expected[key]]
        parts = [f'{len(missing)} missing', f'{len(extra)} extra', f'{len(other)} with other counts']
        example = (other or missing or extra)[0]
        held, wanted = stored.get(example), expected.get(example)
        report.index(
            run_id,
            f'postings differ from a fresh catch-up ({", ".join(parts)}); e.g. term {example[0]!r} at position '
            f'{example[1]}: {_posting(held)}, fresh {_posting(wanted)}',
        )


def _posting(value: tuple[int, int] | None) -> str:
    return 'none' if value is None else f'tf {value[0]} length {value[1]}'


def _gather(
    rows: dict[str, list[PostingsRow]],
    keys: dict[int, str],
    into: _Postings,
    conversation_id: str | None,
    report: Report | None,
) -> None:
    """Decode a scope's postings rows into `into`, by run; what does not decode or names no run goes to `report`."""
    for term, chunks in rows.items():
        for row in chunks:
            try:
                chunk = decode_chunk(row.chunk, row.postings)
                entries = chunk.entries()
            except Exception as error:  # damaged bytes fail in zlib, struct, array or zip alike
                if report is not None:
                    report.scope(
                        conversation_id, f'postings of term {term!r} (chunk {row.chunk}) do not decode: {error}'
                    )
                continue
            for key, tf, length in entries:
                run_key, position = key >> 32, key & 0xFFFFFFFF
                run_id = keys.get(run_key)
                if run_id is None:
                    if report is not None:
                        report.scope(
                            conversation_id,
                            f'postings of term {term!r} name run key {run_key}, which no indexed run has',
                        )
                    continue
                postings = into.setdefault(run_id, {})
                if (term, position) in postings and report is not None:
                    report.index(run_id, f'term {term!r} has two postings at position {position}')
                postings[term, position] = (tf, length)


async def _compare_statistics(
    storage: IndexStorage, fresh: MemoryIndex, conversation_id: str | None, report: Report
) -> None:
    stored = await storage.status(conversation_id, all_scopes=False)
    mine = await fresh.status(conversation_id, all_scopes=False)
    if (stored.docs, stored.length) != (mine.docs, mine.length):
        report.scope(
            conversation_id,
            f'statistics say {count(stored.docs, "document")} of total length {stored.length}; '
            f'a fresh catch-up gives {mine.docs} and {mine.length}',
        )
