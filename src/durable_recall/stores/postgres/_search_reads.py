"""A search's reads on Postgres in as few statements as it can: one for the index, one for the runs shown.

A worker that shares one Postgres with others pays a round trip (and a pooled connection) per
statement, and waits longer for each as the server gets busier. A warm search used to make six:
the scope's status, the postings of its words, the status again (postings and statistics must be
of one generation), the rows of the runs it shows, their records, and their messages. Here the
first three (and the conversation's spans, which windows walk) are one statement, whose one
snapshot makes the postings of the status it returns; and the runs' index rows come with their
records in another. With the messages, a search is three statements. (The index's catch-up reads its runs' index rows
with their records in one statement too.)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any, LiteralString

from ...base import RunRecord
from ...index import OPEN, IndexedRunRow, PostingsRow, ScopeSpans, ScopeStatus, ScopeView, SpansWanted
from .._run_rows import indexed_run
from ._groups import BUCKET_SQL, DAMAGED_TAIL, bucket_of, unpack_group
from ._index_writer import SCOPE_KEY, STORE_GENERATION, IndexDatabase
from ._reads import RUN_COLUMNS, run_from_row

__all__ = ('postings_of', 'rows_with_records', 'rows_with_records_by_id', 'scope_view', 'unpack_spans')

_SPAN = '>qiB6s'
"""One packed span: run key, first, how many bytes of the head are the run's, the head padded to 6 bytes."""

_SPANS_OF: LiteralString = (
    "(SELECT string_agg(int8send(run_key) || int4send(first) || set_byte('\\x00'::bytea, 0, least(length(lengths), 6))"
    " || substring(lengths || '\\x000000000000'::bytea FROM 1 FOR 6), ''::bytea ORDER BY started_at, run_id)"
    ' FROM {index_runs} WHERE scope_key = s.scope_key)'
)
"""The scope `s`'s spans packed into one value (as `PostgresIndex.scope_spans` reads them)."""

_BUCKET: LiteralString = BUCKET_SQL.replace('{term}', 't').replace('{bits}', 'sc.group_bits')

_ASKED: LiteralString = (
    'asked AS (SELECT ARRAY(SELECT DISTINCT t FROM (SELECT unnest(%(terms)s::text[])'
    ' UNION ALL SELECT unnest(%(known_terms)s::text[]) WHERE (SELECT m FROM moved)) AS a (t)) AS terms)'
)
"""The terms whose postings are returned: those asked, and those the caller knew if the generation moved."""

_POSTINGS: LiteralString = (
    ' UNION ALL SELECT 1, NULL, NULL, NULL, NULL, NULL, scope_key, term, chunk, postings, 0'
    ' FROM {index_postings} WHERE term = ANY((SELECT terms FROM asked)::text[])'
    ' AND scope_key = ANY(ARRAY(SELECT scope_key FROM scopes))'
    ' UNION ALL SELECT 1, NULL, NULL, NULL, NULL, NULL, g.scope_key, NULL, b.bits, g.terms, g.bucket'
    ' FROM (SELECT DISTINCT sc.scope_key, sc.group_bits AS bits, ' + _BUCKET + ' AS bucket'
    ' FROM scopes AS sc, unnest((SELECT terms FROM asked)) AS t) AS b'
    ' JOIN {index_groups} AS g ON g.scope_key = b.scope_key AND g.bucket = b.bucket'
)

_HEAD: LiteralString = (
    'SELECT 0, %s::text, %s::bigint, %s::bigint, %s, %s::bytea,'
    ' NULL::bigint, NULL::text, NULL::int, NULL::bytea, NULL::int'
)

_VIEW_SCOPE: LiteralString = (
    'WITH st AS (SELECT scope_key, group_bits, generation, docs, length FROM {index_scopes}'
    ' WHERE scope_key = ' + SCOPE_KEY + '),'
    ' moved AS (SELECT COALESCE((SELECT generation FROM st), %(empty)s) IS DISTINCT FROM %(known)s AS m),'
    ' scopes AS (SELECT scope_key, group_bits FROM st), '
    + _ASKED
    + ' '
    + _HEAD
    % (
        's.generation',
        's.docs',
        's.length',
        'ARRAY(SELECT p.run_id FROM {pending} AS p JOIN {runs} AS r ON r.run_id = p.run_id'
        ' WHERE p.conversation_id = %(pending)s ORDER BY r.started_at, r.run_id)',
        "CASE WHEN %(spans)s = 'yes' OR (%(spans)s = 'if-moved' AND (SELECT m FROM moved)) THEN " + _SPANS_OF + ' END',
    )
    + ' FROM (VALUES (1)) AS one (x) LEFT JOIN st AS s ON true'
    + _POSTINGS
)

_VIEW_ALL: LiteralString = (
    'WITH g AS (SELECT ' + STORE_GENERATION + ' AS value),'
    ' moved AS (SELECT COALESCE((SELECT value FROM g), %(empty)s) IS DISTINCT FROM %(known)s AS m),'
    ' scopes AS (SELECT scope_key, group_bits FROM {index_scopes}), '
    + _ASKED
    + ' '
    + _HEAD
    % (
        '(SELECT value FROM g)',
        '(SELECT COALESCE(SUM(docs), 0) FROM {index_scopes})',
        '(SELECT COALESCE(SUM(length), 0) FROM {index_scopes})',
        'ARRAY(SELECT p.run_id FROM {pending} AS p JOIN {runs} AS r ON r.run_id = p.run_id'
        ' ORDER BY r.started_at, r.run_id)',
        'NULL',
    )
    + _POSTINGS
)

_ROWS_WITH_RECORDS: LiteralString = (
    'SELECT i.run_key, i.run_id, i.scope_key, i.seen, i.first, i.lengths, i.seqs, i.roles, i.times, i.state,'
    ' i.started_at, r.run_id IS NOT NULL, '
    + ', '.join(f'r.{column.strip()}' for column in RUN_COLUMNS.split(','))
    + ' FROM {index_runs} AS i LEFT JOIN {runs} AS r ON r.run_id = i.run_id WHERE i.run_key = ANY(%s::bigint[])'
)

_BY_ID: LiteralString = (
    'SELECT i.run_key, i.run_id, i.scope_key, i.seen, i.first, i.lengths, i.seqs, i.roles, i.times, i.state,'
    ' i.started_at, r.run_id IS NOT NULL, '
    + ', '.join(f'r.{column.strip()}' for column in RUN_COLUMNS.split(','))
    + ' FROM unnest(%s::text[]) AS w (run_id) LEFT JOIN {index_runs} AS i ON i.run_id = w.run_id'
    ' LEFT JOIN {runs} AS r ON r.run_id = w.run_id'
)
"""Runs' index rows (when indexed) with their records (when stored), by run id: catch-up's first read."""


def postings_of(terms: Sequence[str], rows: Iterable[Sequence[Any]]) -> dict[str, list[PostingsRow]]:
    """The chunks of `terms` from rows of `(scope key, term, chunk, postings, bucket)`, by scope then chunk.

    A row with no term is a group (`chunk` is then its scope's group bits): it gives the open
    tails of the terms it holds. A group that does not unpack gives a damaged tail to each term
    whose bucket it is (which terms it held is unknown), so that the search names the damage.
    """
    chunks: list[tuple[str, int, int, bytes]] = []
    for scope_key, term, number, data, bucket in rows:
        if term is not None:
            chunks.append((term, scope_key, number, data))
            continue
        try:
            group = unpack_group(bytes(data))
        except ValueError:
            group = {term: DAMAGED_TAIL for term in terms if bucket_of(term, number) == bucket}
        chunks.extend((term, scope_key, OPEN, group[term]) for term in terms if term in group)
    found: dict[str, list[PostingsRow]] = {}
    for term, _, number, data in sorted(chunks, key=lambda chunk: chunk[:3]):
        found.setdefault(term, []).append(PostingsRow(chunk=number, postings=data))
    return found


def unpack_spans(packed: bytes) -> ScopeSpans:
    """Spans packed by `_SPANS_OF` (or `PostgresIndex.scope_spans`'s query) as columns."""
    run_keys: list[int] = []
    firsts: list[int] = []
    lengths: list[bytes] = []
    for run_key, first, size, head in struct.iter_unpack(_SPAN, packed):
        run_keys.append(run_key)
        firsts.append(first)
        lengths.append(head[:size])
    return ScopeSpans(run_keys=run_keys, firsts=firsts, lengths=lengths)


async def scope_view(
    db: IndexDatabase,
    conversation_id: str | None,
    *,
    all_scopes: bool,
    terms: Sequence[str],
    known: str | None,
    known_terms: Sequence[str],
    spans: SpansWanted,
) -> ScopeView:
    """`ScopeViews.view` on Postgres: one statement (see the module docstring)."""
    asked = list(dict.fromkeys(terms))
    knew = [term for term in dict.fromkeys(known_terms) if term not in asked]
    params = {
        'conv': conversation_id,
        'pending': conversation_id or '',
        'terms': asked,
        'known_terms': knew,
        # A scope without a row reads as generation '': a caller that knew '' has not moved.
        'empty': '',
        'known': known,
        'spans': 'no' if all_scopes else spans,
    }
    async with db.read() as cur:
        await cur.execute(db.sql(_VIEW_ALL if all_scopes else _VIEW_SCOPE), params)
        rows = await cur.fetchall()
    [head] = [row for row in rows if row[0] == 0]  # one row, wherever the plan puts it
    _, generation, docs, length, pending, packed = head[:6]
    generation = generation or ''
    moved = generation != (known if known is not None else None)
    status = ScopeStatus(generation=generation, pending=list(pending), docs=docs or 0, length=length or 0)
    found = postings_of(asked + knew if moved else asked, [row[6:] for row in rows if row[0] != 0])
    view_spans = unpack_spans(bytes(packed)) if packed is not None else None
    if view_spans is None and spans == 'yes' and not all_scopes:
        view_spans = ScopeSpans(run_keys=[], firsts=[], lengths=[])  # a scope without runs
    return ScopeView(status=status, postings=found, moved=moved, spans=view_spans)


async def rows_with_records(
    db: IndexDatabase, run_keys: Sequence[int]
) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]]:
    """Index rows by run key, with the records of their runs (a run deleted meanwhile has none): one statement.

    Raises:
        CorruptRunError: A run row does not read (the caller reads the runs apart, naming it).
    """
    if not run_keys:
        return {}, {}
    async with db.read() as cur:
        await cur.execute(db.sql(_ROWS_WITH_RECORDS), (list(run_keys),))
        rows = await cur.fetchall()
    indexed: dict[int, IndexedRunRow] = {}
    records: dict[str, RunRecord] = {}
    for row in rows:
        indexed[row[0]] = indexed_run(*row[:11])
        if row[11]:
            record = run_from_row(row[12:])
            records[record.run_id] = record
    return indexed, records


async def rows_with_records_by_id(
    db: IndexDatabase, run_ids: Sequence[str]
) -> tuple[dict[str, IndexedRunRow], dict[str, RunRecord]]:
    """Index rows by run id, with the runs' records: one statement (`IndexRowsWithRecords`).

    Raises:
        CorruptRunError: A run row does not read (catch-up then reads the runs apart, naming it).
    """
    if not run_ids:
        return {}, {}
    async with db.read() as cur:
        await cur.execute(db.sql(_BY_ID), (sorted(set(run_ids)),))
        rows = await cur.fetchall()
    indexed: dict[str, IndexedRunRow] = {}
    records: dict[str, RunRecord] = {}
    for row in rows:
        if row[0] is not None:
            indexed[row[1]] = indexed_run(*row[:11])
        if row[11]:
            record = run_from_row(row[12:])
            records[record.run_id] = record
    return indexed, records
