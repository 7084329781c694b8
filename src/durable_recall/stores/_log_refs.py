"""Inherited log entries as ranges of references: what the SQL stores write, and how a read follows them.

A run whose first snapshot builds on a snapshot of another run of its conversation does not copy
the messages it inherits. Its log holds *reference ranges* instead, one row per stretch:
[`RefRange`] `(run_id, seq, count, ref_run_id, ref_seq)`
says that entries `seq .. seq + count - 1` of `run_id` are entries `ref_seq ..` of `ref_run_id`.
Entries with a body of their own stay rows of the message table.

A range names the *base run's* entries, even where those are references themselves. Naming the
run holding each body instead (one hop) would not make ranges: a chat app runs once per exchange,
each run inheriting a window of recent messages, and the bodies in that window belong to as many
runs as it spans, two or three entries each and rarely adjacent. A run's inherited window is then
one or two ranges of its base run, where naming owners took a row per message. A read follows
references run to run (a recursive query in each SQL store), and `MAX_HOPS` bounds how far: a
stretch whose entries would lie deeper than that names the runs holding the bodies instead, so
that no read of a message follows more than `MAX_HOPS` references.

References never leave a conversation: a base in another conversation is copied (bodies and
all), so deleting a conversation never takes a body another one needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..base import StoredBody
from ._chain import LogRange

__all__ = (
    'MAX_HOPS',
    'BaseEntry',
    'RefRange',
    'ResolvedRow',
    'owners_of',
    'reference_ranges',
    'resolved_logs',
    'spans',
)

MAX_HOPS = 16
"""The most references a read follows from a run's entry to the row holding its body.

A chat window of 20 messages spans about ten runs, so its entries lie at most about ten deep:
under the bound, every run's window stays one or two ranges. A stretch past it (a long history
inherited whole, run after run) names the bodies' runs directly, which costs a row per run
holding them, once every `MAX_HOPS` runs.
"""


@dataclass(frozen=True)
class RefRange:
    """Entries `seq .. seq + count - 1` of run `run_id` are entries `ref_seq ..` of run `ref_run_id`."""

    run_id: str
    seq: int
    count: int
    ref_run_id: str
    ref_seq: int


@dataclass(frozen=True)
class BaseEntry:
    """An entry of a base snapshot, as a save that builds on it needs it.

    Attributes:
        seq: Its number in the base run's log.
        owner: The run whose log holds its body: the base run, or the run its references lead to.
        owner_seq: The body's number in the owner's log.
        hops: The references followed from the base run to the owner (0: the base run holds it).
        body: The stored body, when the save copies it (`None` when it refers to it).
    """

    seq: int
    owner: str
    owner_seq: int
    hops: int = 0
    body: StoredBody | None = None


def reference_ranges(run_id: str, base_run_id: str, inherited: Sequence[tuple[int, BaseEntry]]) -> list[RefRange]:
    """The ranges that store a run's inherited entries, given as `(own log number, base entry)` in log order.

    A stretch contiguous in both logs is one range of the base run's entries, unless an entry would
    then lie more than `MAX_HOPS` references deep: that stretch names the owners, a range per
    stretch contiguous in an owner's log.
    """
    ranges: list[RefRange] = []
    for stretch in _stretches(inherited, lambda entry: (base_run_id, entry.seq)):
        first_seq, first = stretch[0]
        if max(entry.hops for _, entry in stretch) < MAX_HOPS:
            ranges.append(RefRange(run_id, first_seq, len(stretch), base_run_id, first.seq))
            continue
        for piece in _stretches(stretch, lambda entry: (entry.owner, entry.owner_seq)):
            seq, entry = piece[0]
            ranges.append(RefRange(run_id, seq, len(piece), entry.owner, entry.owner_seq))
    return ranges


def _stretches(
    entries: Sequence[tuple[int, BaseEntry]], target: Callable[[BaseEntry], tuple[str, int]]
) -> list[list[tuple[int, BaseEntry]]]:
    """Split entries where either their own numbers or their targets' numbers (in one run) stop following on."""
    stretches: list[list[tuple[int, BaseEntry]]] = []
    for seq, entry in entries:
        if stretches:
            last_seq, last = stretches[-1][-1]
            (last_run, last_at), (run, at) = target(last), target(entry)
            if seq == last_seq + 1 and run == last_run and at == last_at + 1:
                stretches[-1].append((seq, entry))
                continue
        stretches.append([(seq, entry)])
    return stretches


ResolvedRow = tuple[str, int, int | None, StoredBody | None]
"""A row of a store's resolving read: `(run_id, seq, None, body)`, the body of the run's entry `seq`;
or `(run_id, first, end, None)`, entries `first` up to `end` of the run are references (whose bodies
other rows give, unless they are missing)."""


def resolved_logs(
    rows: Iterable[ResolvedRow], wanted: Iterable[tuple[str, int, int]] = ()
) -> dict[str, dict[int, StoredBody | None]]:
    """Log entries by run and number from a resolving read of the `(run_id, first, end)` ranges `wanted`.

    An entry a reference covers but no body row answers (its body is gone) is `None`, which a
    reader reports as missing. So is an entry asked for that neither holds while a later entry of
    the same run is found: a run's log numbers follow on from 0 without a gap (a save appends),
    so that entry's row was lost, or a damaged file holds its key as another type (SQLite keeps
    whatever a file holds: a text or BLOB number or run id matches no lookup). An entry past the
    last one found is left out, as a number past the log is: no read by number can tell it from
    one (`durable-recall check` reads the snapshots that name it, and scans the key types).
    """
    covered: list[tuple[str, int, int]] = []
    found: dict[str, dict[int, StoredBody | None]] = {}
    for run_id, seq, end, body in rows:
        if end is None:
            found.setdefault(run_id, {})[seq] = body
        else:
            covered.append((run_id, seq, end))
    logs: dict[str, dict[int, StoredBody | None]] = {}
    for run_id, first, end in covered:
        logs.setdefault(run_id, {}).update(dict.fromkeys(range(first, end)))
    for run_id, bodies in found.items():
        logs.setdefault(run_id, {}).update(bodies)
    _mark_holes(logs, wanted)
    return logs


def _mark_holes(logs: dict[str, dict[int, StoredBody | None]], wanted: Iterable[tuple[str, int, int]]) -> None:
    """Mark as missing (`None`) each entry asked for that is absent below the run's last entry found.

    Costs a pass over the numbers asked for up to the last one found, no more than the entries
    the read returned (plus the holes): no query.
    """
    tops = {run_id: max(log) for run_id, log in logs.items() if log}
    for run_id, first, end in wanted:
        top = tops.get(run_id)
        if top is None or first >= top:
            continue
        log = logs[run_id]
        for seq in range(max(first, 0), min(end, top)):  # a log numbers from 0: no entry below
            if seq not in log:
                log[seq] = None


def spans(seqs: Iterable[int]) -> list[LogRange]:
    """Log numbers as the fewest `(first, end)` ranges, in order (repeats ignored)."""
    out: list[LogRange] = []
    for seq in sorted(set(seqs)):
        if out and out[-1][1] == seq:
            out[-1] = (out[-1][0], seq + 1)
        else:
            out.append((seq, seq + 1))
    return out


def owners_of(rows: Iterable[tuple[str, int, int, int, int]], seqs: Iterable[int]) -> dict[int, tuple[str, int]]:
    """Where each of one run's entries `seqs` lives: `(run_id, seq)` of the row meant to hold its body.

    `rows` are a resolving read's `want` rows for that run, `(run_id, first, stop, shift, hops)`
    (see the stores' `log_owners`): the deepest one covering an entry is where its references lead.
    Found whether or not the body is still there, so a missing or damaged body is named where it
    lives, not in every run that inherited it.
    """
    ordered = sorted(rows, key=lambda row: -row[4])
    owners: dict[int, tuple[str, int]] = {}
    for seq in seqs:
        for run_id, first, stop, shift, _ in ordered:
            if first <= seq - shift < stop:
                owners[seq] = (run_id, seq - shift)
                break
    return owners
