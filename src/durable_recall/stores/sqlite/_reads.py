"""The SQLite store's reads: runs, snapshot rows and message-log entries, as rows to decode.

Each function runs its statements on a connection the caller holds (in a worker thread, inside a
`BEGIN` when several statements must see one snapshot of the file); decoding, which is CPU work,
is left to the caller, after the connection is released.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ...base import CorruptRunError, CorruptSnapshotError, StoredBody
from .._chain import LogRange
from .._log_refs import MAX_HOPS, BaseEntry, ResolvedRow, owners_of, resolved_logs, spans
from .._run_rows import missing_run, stored_name
from .._snapshot_rows import SnapshotRow, check_consecutive, log_span
from ._connection import transaction
from ._params import chunked, marks

__all__ = (
    'RUN_COLUMNS',
    'SNAPSHOT_COLUMNS',
    'conversation_summaries',
    'conversations',
    'latest_snapshot_row',
    'log_entries',
    'log_numbers',
    'log_owners',
    'log_span_entries',
    'logs',
    'mistyped_rows',
    'unowned_log_rows',
    'owned_entries',
    'run_rows',
    'runs_listed',
    'listing_rows',
    'snapshot_rows',
)

RUN_COLUMNS = 'run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token'
SNAPSHOT_COLUMNS = 'idx, step_index, state, saved_at, ranges, size, checksum'

_FOLLOW = (
    ' UNION ALL SELECT w.origin, f.ref_run_no, max(w.first, f.seq) - f.seq + f.ref_seq,'
    ' min(w.stop, f.seq + f.count) - f.seq + f.ref_seq, w.shift + f.seq - f.ref_seq, w.hops + 1'
    ' FROM want AS w JOIN dr_message_refs AS f ON f.run_no = w.run_no AND f.seq < w.stop AND f.seq + f.count > w.first'
    f' WHERE w.hops < {MAX_HOPS})'
)

_BODIES = (
    ' SELECT w.origin, m.seq + w.shift, NULL, m.body FROM want AS w'
    ' JOIN dr_messages AS m ON m.run_no = w.run_no AND m.seq >= w.first AND m.seq < w.stop'
    ' UNION ALL SELECT origin, first + shift, stop + shift, NULL FROM want WHERE hops = 1'
)
"""The bodies of the entries asked for, and which of them references cover (`ResolvedRow`s)."""

_RANGES_PER_QUERY = 300
"""Ranges asked for in one statement: three parameters each, under old SQLite's 999."""


def _want(count: int) -> str:
    """The recursive `want (origin, run_no, first, stop, shift, hops)` of `count` bound `(run, first, end)` ranges.

    A row asks for entries `first` up to `stop` of the run numbered `run_no`, on behalf of entries
    `first + shift` up to `stop + shift` of run `origin` (an id): the ranges asked for, then the
    stretches of other runs' logs that their references name, `hops` references away (at most
    `MAX_HOPS`). A run id without a run row asks for nothing.
    """
    values = ', '.join(['(?, ?, ?)'] * count)
    return (
        'WITH RECURSIVE want (origin, run_no, first, stop, shift, hops) AS ('
        ' SELECT v.column1, r.run_no, v.column2, v.column3, 0, 0'
        f' FROM (VALUES {values}) AS v JOIN dr_runs AS r ON r.run_id = v.column1' + _FOLLOW
    )


def run_rows(conn: sqlite3.Connection, run_ids: Sequence[str]) -> list[Any]:
    """The runs rows of these run ids (ids never registered are left out), in one snapshot.

    Raises:
        CorruptRunError: An id has no run row but has snapshots (see `missing_run`). Only the ids
            not found are looked up in the snapshots table, so a read that finds its runs pays nothing.
    """
    wanted = sorted(set(run_ids))
    if len(wanted) == 1:  # one statement sees one snapshot: no transaction, unless the run is missing
        rows: list[Any] = conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs WHERE run_id = ?', wanted).fetchall()
        if rows:
            return rows
    rows = []
    with transaction(conn, 'BEGIN'):
        for chunk in chunked(wanted):
            rows += conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs WHERE run_id IN ({marks(chunk)})', chunk)
        found = {row[0] for row in rows}
        lost = _with_snapshots(conn, [run_id for run_id in wanted if run_id not in found])
        if lost is not None:
            raise missing_run(lost)
    return rows


def _with_snapshots(conn: sqlite3.Connection, run_ids: Sequence[str]) -> str | None:
    """The first of these runs (ids without a run row) that has a snapshot: a run row lost, not a run never stored."""
    for chunk in chunked(run_ids):
        query = f'SELECT run_id FROM dr_snapshots WHERE run_id IN ({marks(chunk)}) ORDER BY run_id LIMIT 1'
        for (run_id,) in conn.execute(query, chunk):
            return run_id
    return None


def conversations(conn: sqlite3.Connection) -> list[str]:
    """The conversation ids runs name, in order.

    Raises:
        CorruptRunError: A run's conversation id is stored as another type than text (looked up
            only then), which a listing would otherwise return as bytes or a number.
    """
    rows = conn.execute(
        'SELECT DISTINCT conversation_id FROM dr_runs'
        " WHERE conversation_id IS NOT NULL AND conversation_id <> '' ORDER BY conversation_id"
    ).fetchall()
    if all(isinstance(row[0], str) for row in rows):
        return [row[0] for row in rows]
    query = "SELECT run_id, typeof(conversation_id) FROM dr_runs WHERE typeof(conversation_id) NOT IN ('text', 'null')"
    run_id, kind = conn.execute(query).fetchone()
    raise CorruptRunError(stored_name(run_id), f'conversation_id is stored as {kind}, not text')


def conversation_summaries(conn: sqlite3.Connection) -> tuple[list[tuple[str, int, int, int]], int] | None:
    """`(conversation id, runs, first start, last start)` per conversation (starts in microseconds), and loose runs.

    One pass over `dr_runs_by_conversation`, grouped in SQL. `None` when a run's conversation id
    or start time is stored as another type than this release writes: then the caller reads the
    runs one by one, which names such a row (or reads a start time a hand edit stored as text).
    """
    with transaction(conn, 'BEGIN'):
        rows = conn.execute(
            'SELECT conversation_id, COUNT(*), MIN(started_at), MAX(started_at),'
            " SUM(typeof(started_at) <> 'integer') FROM dr_runs"
            " WHERE conversation_id IS NOT NULL AND conversation_id <> '' GROUP BY conversation_id"
        ).fetchall()
        [(loose,)] = conn.execute(
            "SELECT COUNT(*) FROM dr_runs WHERE conversation_id IS NULL OR conversation_id = ''"
        ).fetchall()
    if all(isinstance(row[0], str) and not row[4] for row in rows):
        return [(conversation_id, runs, first, last) for conversation_id, runs, first, last, _ in rows], loose
    return None


def runs_listed(conn: sqlite3.Connection, conversation_id: str | None, parent_run_id: str | None) -> list[Any]:
    """The runs rows of a conversation and/or a parent run (every run when neither), oldest first."""
    conditions: list[str] = []
    params: list[str] = []
    if conversation_id is not None:
        conditions.append('conversation_id = ?')
        params.append(conversation_id)
    if parent_run_id is not None:
        conditions.append('parent_run_id = ?')
        params.append(parent_run_id)
    where = f' WHERE {" AND ".join(conditions)}' if conditions else ''
    return conn.execute(f'SELECT {RUN_COLUMNS} FROM dr_runs{where} ORDER BY started_at, run_id', params).fetchall()


def snapshot_rows(
    conn: sqlite3.Connection, run_id: str, *, include_interrupted: bool, after: int
) -> tuple[list[SnapshotRow], dict[int, StoredBody | None]]:
    """A run's snapshot rows after index `after` that a listing shows, and the log entries they span."""
    with transaction(conn, 'BEGIN'):
        return listing_rows(conn, run_id, include_interrupted=include_interrupted, after=after)


def listing_rows(
    conn: sqlite3.Connection, run_id: str, *, include_interrupted: bool, after: int
) -> tuple[list[SnapshotRow], dict[int, StoredBody | None]]:
    """`snapshot_rows` inside the caller's transaction (a batch of runs read together)."""
    query = f'SELECT {SNAPSHOT_COLUMNS} FROM dr_snapshots WHERE run_id = ? AND idx > ? ORDER BY idx'
    rows = [SnapshotRow(run_id, *row) for row in conn.execute(query, (run_id, after))]
    check_consecutive(run_id, rows, after)
    rows = [row for row in rows if row.is_shown(include_interrupted)]
    if not rows:
        return [], {}
    first, end = log_span(rows)
    return rows, log_span_entries(conn, run_id, first, end)


def latest_snapshot_row(conn: sqlite3.Connection, run_id: str, *, include_interrupted: bool) -> SnapshotRow | None:
    """A run's last snapshot row (the last complete one unless `include_interrupted`)."""
    # A row of unknown state is not filtered out: it is returned, and raises when decoded.
    condition = '' if include_interrupted else " AND state <> 'interrupted'"
    query = f'SELECT {SNAPSHOT_COLUMNS} FROM dr_snapshots WHERE run_id = ?{condition} ORDER BY idx DESC LIMIT 1'
    found = conn.execute(query, (run_id,)).fetchone()
    return None if found is None else SnapshotRow(run_id, *found)


def logs(conn: sqlite3.Connection, wanted: Sequence[tuple[str, int, int]]) -> dict[str, dict[int, StoredBody | None]]:
    """Log entries by run and number, for `(run_id, first, end)` ranges, references followed (call in a transaction).

    `None` for an entry a reference covers whose body is gone, or one missing below a later entry
    found (see `resolved_logs`); entries past a log are left out.
    """
    rows: list[ResolvedRow] = []
    for chunk in chunked(wanted, _RANGES_PER_QUERY):
        rows += conn.execute(_want(len(chunk)) + _BODIES, [value for item in chunk for value in item])
    read = {row[0] for row in rows}
    _check_numbered([run_id for run_id, _, _ in wanted if run_id not in read], conn)
    return resolved_logs(rows, wanted)


def _check_numbered(run_ids: Sequence[str], conn: sqlite3.Connection) -> None:
    """Raise for a run read nothing of whose log is found because its run row is gone, while its snapshots are not.

    The log names runs by number (schema version 13), found through the run row: without it, the
    log's rows cannot be found, and reading them as an empty log would be reading other data. A
    run that was never stored (no snapshot either) reads as empty, as before. Looked up only for
    runs a read found nothing of, so a read that finds its entries pays nothing.

    Raises:
        CorruptSnapshotError: A run has snapshots but no run row.
    """
    absent: list[str] = []
    for chunk in chunked(sorted(set(run_ids))):
        found = {row[0] for row in conn.execute(f'SELECT run_id FROM dr_runs WHERE run_id IN ({marks(chunk)})', chunk)}
        absent += [run_id for run_id in chunk if run_id not in found]
    lost = _with_snapshots(conn, absent)
    if lost is not None:
        raise CorruptSnapshotError(
            lost, -1, 'its run row is missing (or its id is stored as another type), so its log cannot be read'
        )


def log_numbers(conn: sqlite3.Connection, run_id: str, seqs: Sequence[int]) -> dict[int, StoredBody | None]:
    """The run's log entries with these numbers (call inside a transaction)."""
    return logs(conn, [(run_id, first, end) for first, end in spans(seqs)]).get(run_id, {})


def log_owners(conn: sqlite3.Connection, run_id: str, seqs: Sequence[int]) -> dict[int, tuple[str, int]]:
    """Where the run's entries `seqs` keep their bodies, `(run_id, seq)`, references followed (see `owners_of`)."""
    rows: list[tuple[str, int, int, int, int]] = []
    select = (
        ' SELECT r.run_id, w.first, w.stop, w.shift, w.hops FROM want AS w JOIN dr_runs AS r ON r.run_no = w.run_no'
    )
    for chunk in chunked(spans(seqs), _RANGES_PER_QUERY):
        rows += conn.execute(
            _want(len(chunk)) + select, [value for first, end in chunk for value in (run_id, first, end)]
        )
    return owners_of(rows, seqs)


def log_span_entries(conn: sqlite3.Connection, run_id: str, first: int, end: int) -> dict[int, StoredBody | None]:
    """The run's log entries numbered `first` up to `end` (`None`: a reference to a row that is gone)."""
    return logs(conn, [(run_id, first, end)]).get(run_id, {})


def log_entries(conn: sqlite3.Connection, run_id: str, ranges: list[LogRange]) -> dict[int, StoredBody | None]:
    """The run's log entries that `ranges` name, by number."""
    return logs(conn, [(run_id, first, end) for first, end in ranges]).get(run_id, {})


def owned_entries(
    conn: sqlite3.Connection, run_id: str, ranges: Sequence[LogRange], *, bodies: bool
) -> dict[int, BaseEntry]:
    """The run's entries that `ranges` name, each with the run and row holding its body (and the body if asked).

    What a save building on a snapshot of the run needs (`BaseEntry`); an entry whose body is
    gone is left out.
    """
    select = (
        ' SELECT m.seq + w.shift, r.run_id, m.seq, w.hops, {} FROM want AS w'
        ' JOIN dr_messages AS m ON m.run_no = w.run_no AND m.seq >= w.first AND m.seq < w.stop'
        ' JOIN dr_runs AS r ON r.run_no = w.run_no'
    ).format('m.body' if bodies else 'NULL')
    entries: dict[int, BaseEntry] = {}
    for chunk in chunked(ranges, _RANGES_PER_QUERY):
        params = [value for first, end in chunk for value in (run_id, first, end)]
        found = conn.execute(_want(len(chunk)) + select, params)
        entries.update((seq, BaseEntry(seq, owner, at, hops, body)) for seq, owner, at, hops, body in found)
    return entries


_RUN_OF_NUMBER = (
    "COALESCE((SELECT r.run_id FROM dr_runs AS r WHERE r.run_no = t.run_no), 'run number ' || quote(t.run_no))"
)
"""A log row's run, named by its id, or by the number it holds when no run has that number (a damaged one)."""

_DECLARED: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        'dr_runs',
        'the run row',
        't.run_id',
        (
            ('run_id', "'text'"),
            ('conversation_id', "'text', 'null'"),
            ('parent_run_id', "'text', 'null'"),
            ('agent_name', "'text', 'null'"),
            ('metadata', "'text'"),
            ('started_at', "'integer'"),
            ('token', "'text'"),
        ),
    ),
    (
        'dr_snapshots',
        'snapshot row',
        't.run_id',
        (
            ('run_id', "'text'"),
            ('idx', "'integer'"),
            ('step_index', "'integer'"),
            ('state', "'text'"),
            ('saved_at', "'integer'"),
            ('ranges', "'text'"),
            ('size', "'integer'"),
        ),
    ),
    (
        'dr_messages',
        'log entry',
        _RUN_OF_NUMBER,
        (('run_no', "'integer'"), ('seq', "'integer'"), ('body', "'text', 'blob'")),
    ),
    (
        'dr_message_refs',
        'inherited range at',
        _RUN_OF_NUMBER,
        (
            ('run_no', "'integer'"),
            ('seq', "'integer'"),
            ('count', "'integer'"),
            ('ref_run_no', "'integer'"),
            ('ref_seq', "'integer'"),
        ),
    ),
)
"""Per table: what its rows are, how a row's run is named, and the storage classes (`typeof`) each column may hold.

A run's row is numbered by SQLite (`run_no`, its rowid): only the columns a write binds can be mistyped."""


def mistyped_rows(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Every stored row with a column of another type than the schema declares: `(run, what)`.

    SQLite stores whatever type a value has, whatever the column declares (the tables are not
    STRICT), and a mistyped key matches no lookup by value: such a row drops out of every read
    that asks for it by key. A read notices most of them (a gap in a listing, a hole in a log),
    but not all: a run row whose conversation id is a BLOB is simply not in that conversation's
    listing. Only a scan sees every one, so `durable-recall check` runs this (a full read of the
    four tables; never on a read path). The run is named by its id, or, where the id itself is
    mistyped, by `stored_name`.
    """
    found: list[tuple[str, str]] = []
    for table, what, run, columns in _DECLARED:
        kinds = ', '.join(f'typeof(t.{column})' for column, _ in columns)
        wrong = ' OR '.join(f'typeof(t.{column}) NOT IN ({allowed})' for column, allowed in columns)
        query = f'SELECT {run}, t.{columns[1][0]}, {kinds} FROM {table} AS t WHERE {wrong}'
        for run_id, number, *stored in conn.execute(query):
            bad = [
                f'{column} is stored as {kind}'
                for (column, allowed), kind in zip(columns, stored, strict=True)
                if f"'{kind}'" not in allowed
            ]
            where = '' if table == 'dr_runs' else f' {stored_name(number)}'
            found.append((stored_name(run_id), f'{what}{where}: {", ".join(bad)}'))
    return found


_UNOWNED = (
    ('dr_messages', 'run_no', '{count} log entries of run number {run_no}, which no run row has'),
    ('dr_message_refs', 'run_no', '{count} inherited ranges of run number {run_no}, which no run row has'),
    ('dr_message_refs', 'ref_run_no', '{count} inherited ranges name run number {run_no}, which no run row has'),
)
"""Per scan: the table, the column naming a run by number, and how what it finds is worded."""


def unowned_log_rows(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Message-log rows naming a run number no run row has: `(run, what)`, the run named by its number.

    The log names runs by number (schema version 13), and deleting a conversation deletes its
    runs' log rows with them, so such a row is a run row lost to damage or a hand edit (or a
    damaged number). Reads of the run's log name it when its snapshots remain; a scan finds the
    rest, so `durable-recall check` runs this (never on a read path). Mistyped numbers are left to
    `mistyped_rows`.
    """
    found: list[tuple[str, str]] = []
    for table, column, wording in _UNOWNED:
        query = (
            f"SELECT {column}, COUNT(*) FROM {table} WHERE typeof({column}) = 'integer'"
            f' AND {column} NOT IN (SELECT run_no FROM dr_runs) GROUP BY {column}'
        )
        for run_no, count in conn.execute(query):
            found.append((f'run number {run_no}', wording.format(count=count, run_no=run_no)))
    return found
