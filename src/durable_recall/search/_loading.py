"""Reading back what a ranking shows: the hits' runs' records and their windows' messages, in one batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..base import RunRecord
from ._damage import DAMAGE
from ._hits import Candidate, Doc, Hit, assemble
from ._reads import Reader
from ._scope_cache import CachedRun

__all__ = ('load_hits',)


async def load_hits(
    reader: Reader,
    runs: Mapping[int, CachedRun],
    wanted: Mapping[int, set[int]],
    later: Mapping[int, set[int]],
    candidates: Sequence[Candidate],
    windows: Sequence[tuple[Doc, ...]],
    *,
    damaged: Callable[[str], None],
) -> list[Hit]:
    """The candidates as hits (see `Ranker.load`): `wanted` positions by run are shown, `later` read ahead.

    `runs` holds the runs of both (from the scope's cache); their records are read here when not yet.
    """
    unread = [run for run in runs.values() if run.record is None]
    found_records = await reader.records(
        [run.row.run_id for run in unread if run.row.run_key in wanted],
        ahead=[run.row.run_id for run in unread if run.row.run_key not in wanted],
    )
    for run in unread:
        run.record = found_records.get(run.row.run_id)
    records = {key: run.record for key, run in runs.items() if key in wanted and run.record is not None}
    asked: list[tuple[RunRecord, dict[int, int]]] = []
    for key, record in list(records.items()):
        try:
            seqs = runs[key].seqs
        except DAMAGE as error:
            damaged(f'the log numbers of run {record.run_id!r} do not decode ({error})')
            del records[key]
            continue
        asked.append((record, {p: seqs[p] for p in wanted[key] if p < len(seqs)}))
    summaries = [runs[key].summaries for key in records]
    read_ahead: list[tuple[RunRecord, list[int]]] = []
    for key, positions in later.items():
        run = runs.get(key)
        if run is None or run.record is None:
            continue
        try:
            seqs = run.seqs
        except DAMAGE:
            continue  # named if the window is asked for
        read_ahead.append((run.record, [seqs[p] for p in positions if p < len(seqs)]))
    keys = {run.record.run_id: key for key, run in runs.items() if run.record is not None}
    shown = await reader.messages(asked, summaries, keys=keys, ahead=read_ahead)
    read = dict(zip(records, shown, strict=True))
    times = {key: runs[key].shown_times(reader.unreadable) for key in records}
    return assemble(candidates, windows, records, read, times)
