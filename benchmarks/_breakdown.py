"""Where a store's bytes go: each table with its indexes, its rows, and its heaviest columns.

"storage / raw message text" says how much a store costs; this says what to shrink. For every
table of the store (the `dr_` prefix) it reports the bytes of the table and of each of its
indexes, the number of rows, and the payload of each column (bytes of its values and how many
are set), so that, say, a message log made mostly of references to inherited messages, or a
per-run fold state larger than the text it folds, shows as such.

On SQLite the bytes are pages from `dbstat`, read after a WAL checkpoint so the file holds
everything; pages of no table are free pages. On Postgres they are `pg_relation_size` of the
heap, its free-space and visibility maps (forks of the heap, about four pages a table once a
vacuum has run), the TOAST table and each index, after a `VACUUM ANALYZE`. `floors` names
what a store pays however its text is stored: the rows every run has, and Postgres's maps.
Column payloads are
`length(CAST(value AS BLOB))` of text and blob values on SQLite (integers take one to eight
bytes and are left out) and `pg_column_size` on Postgres.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql

__all__ = (
    'MAPS',
    'PER_RUN_TABLES',
    'Breakdown',
    'Part',
    'TableBytes',
    'postgres_breakdown',
    'postgres_compacted',
    'render',
    'size',
    'sqlite_breakdown',
    'storage_reason',
    'floors',
    'where_bytes_go',
)

_PREFIX = 'dr_'

_OURS = (
    ' FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace'
    " WHERE n.nspname = %s AND c.relkind = 'r' AND left(c.relname, 3) = %s"
)
"""The `FROM` and `WHERE` of a query over our tables in a schema (parameters: the schema, `_PREFIX`)."""

MAPS = '(free-space and visibility maps)'
"""The part naming a Postgres heap's free-space and visibility map forks."""

PER_RUN_TABLES = ('dr_runs', 'dr_snapshots', 'dr_index_runs')
"""Tables that hold a row (or two) for every run, whatever the run holds: a floor under a store of short runs."""


@dataclass(frozen=True)
class Part:
    """A named share of a table: its heap or b-tree, TOAST, an index; or a column's values."""

    name: str
    bytes: int
    values: int = 0


@dataclass
class TableBytes:
    """One table: everything it occupies, its rows, and what it is made of."""

    table: str
    bytes: int
    rows: int
    parts: list[Part] = field(default_factory=list[Part])
    columns: list[Part] = field(default_factory=list[Part])


@dataclass
class Breakdown:
    """A store's bytes, table by table (largest first); `total` is the whole store."""

    backend: str
    total: int
    tables: list[TableBytes]
    method: str

    @property
    def unaccounted(self) -> int:
        """Bytes of no table of ours: free pages, SQLite's own schema."""
        return self.total - sum(table.bytes for table in self.tables)


def sqlite_breakdown(path: str | Path) -> Breakdown:
    """The SQLite file's pages by table and index (`dbstat`), after a WAL checkpoint."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)')
        page_size: int = conn.execute('PRAGMA page_size').fetchone()[0]
        pages: int = conn.execute('PRAGMA page_count').fetchone()[0]
        owners = {
            str(name): str(table)
            for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')")
        }
        tables: dict[str, TableBytes] = {}
        for name, used in conn.execute('SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC'):
            owner = owners.get(str(name), '')
            if not owner.startswith(_PREFIX):
                continue
            if owner not in tables:
                tables[owner] = TableBytes(owner, 0, _count(conn, owner))
            entry = tables[owner]
            entry.bytes += int(used)
            entry.parts.append(Part(str(name) if name != owner else '(table)', int(used)))
        for entry in tables.values():
            entry.columns = _sqlite_columns(conn, entry.table)
    ordered = sorted(tables.values(), key=lambda entry: -entry.bytes)
    return Breakdown('SQLite', page_size * pages, ordered, 'dbstat pages after a WAL checkpoint')


def _count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


def _sqlite_columns(conn: sqlite3.Connection, table: str) -> list[Part]:
    names = [str(row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")')]
    if not names:
        return []
    sums = ', '.join(
        f"""SUM(CASE WHEN typeof("{name}") IN ('text', 'blob') THEN length(CAST("{name}" AS BLOB)) ELSE 0 END),"""
        f""" COUNT("{name}")"""
        for name in names
    )
    row = conn.execute(f'SELECT {sums} FROM "{table}"').fetchone()
    columns = [Part(name, int(row[2 * index] or 0), int(row[2 * index + 1])) for index, name in enumerate(names)]
    return sorted((column for column in columns if column.bytes), key=lambda column: -column.bytes)


def postgres_breakdown(url: str, schema: str) -> Breakdown:
    """Heap, TOAST and each index of every table of ours in `schema`, after a `VACUUM ANALYZE`."""
    import psycopg
    from psycopg import sql

    tables: list[TableBytes] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('VACUUM ANALYZE')
        rows = conn.execute(
            'SELECT c.oid, c.relname, pg_total_relation_size(c.oid), pg_table_size(c.oid),'
            ' COALESCE(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0), pg_relation_size(c.oid)' + _OURS,
            (schema, _PREFIX),
        ).fetchall()
        for oid, name, total, table_size, toast, heap in rows:
            qualified = sql.Identifier(schema, str(name))
            count = conn.execute(sql.SQL('SELECT COUNT(*) FROM {}').format(qualified)).fetchone()
            entry = TableBytes(str(name), int(total), int(count[0]) if count else 0)
            entry.parts.append(Part('(heap)', int(heap)))
            # The heap's other forks: the free-space map (three pages once a VACUUM has made one) and
            # the visibility map, a fixed cost of every table that has rows.
            maps = int(table_size) - int(toast) - int(heap)
            if maps:
                entry.parts.append(Part(MAPS, maps))
            if toast:
                entry.parts.append(Part('(TOAST)', int(toast)))
            indexes = conn.execute(
                'SELECT i.relname, pg_relation_size(i.oid) FROM pg_index AS x JOIN pg_class AS i'
                ' ON i.oid = x.indexrelid WHERE x.indrelid = %s ORDER BY 2 DESC',
                (oid,),
            ).fetchall()
            entry.parts.extend(Part(str(index), int(used)) for index, used in indexes)
            names = [
                str(column)
                for (column,) in conn.execute(
                    'SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped'
                    ' ORDER BY attnum',
                    (oid,),
                )
            ]
            entry.columns = _postgres_columns(conn, qualified, names)
            tables.append(entry)
    tables.sort(key=lambda entry: -entry.bytes)
    method = 'pg_relation_size of heap, TOAST and indexes after VACUUM ANALYZE'
    return Breakdown('Postgres', sum(entry.bytes for entry in tables), tables, method)


def postgres_compacted(url: str, schema: str) -> int:
    """The size of our tables in `schema` after a `VACUUM FULL` of each: live row versions only.

    Rewrites the tables, so call it after everything else is measured on the store. Set against
    `postgres_breakdown`'s total, it tells how much of a store is space that updates left dead
    (the index's open tails and groups are rewritten as words join them), which a plain vacuum
    makes reusable but does not give back.
    """
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        names = [str(name) for (name,) in conn.execute('SELECT c.relname' + _OURS, (schema, _PREFIX))]
        for name in names:
            qualified = sql.Identifier(schema, name)
            conn.execute(sql.SQL('VACUUM (FULL, ANALYZE) {}').format(qualified))
            conn.execute(sql.SQL('VACUUM {}').format(qualified))  # the maps a plain vacuum keeps, as the breakdown has
        sizes = conn.execute('SELECT pg_total_relation_size(c.oid)' + _OURS, (schema, _PREFIX)).fetchall()
        return sum(int(used) for (used,) in sizes)


def _postgres_columns(conn: psycopg.Connection[Any], table: sql.Composable, names: list[str]) -> list[Part]:
    from psycopg import sql

    if not names:
        return []
    sums = sql.SQL(', ').join(
        sql.SQL('COALESCE(SUM(pg_column_size({c})), 0), COUNT({c})').format(c=sql.Identifier(name)) for name in names
    )
    row = conn.execute(sql.SQL('SELECT {} FROM {}').format(sums, table)).fetchone()
    assert row is not None
    columns = [Part(name, int(row[2 * index]), int(row[2 * index + 1])) for index, name in enumerate(names)]
    return sorted((column for column in columns if column.bytes), key=lambda column: -column.bytes)


def size(count: float) -> str:
    """Bytes for a reader: `15.8 MB`, `412.3 KB`, `96 B`."""
    for unit, scale in (('GB', 1e9), ('MB', 1e6), ('KB', 1e3)):
        if abs(count) >= scale:
            return f'{count / scale:,.{2 if unit != "KB" else 1}f} {unit}'
    return f'{count:,.0f} B'


def render(breakdown: Breakdown, *, label: str, raw_bytes: int, runs: int) -> str:
    """The breakdown as an aligned table: tables largest first, each with its parts under it."""
    header = ['table / part', 'bytes', 'share', '/ raw', 'rows', 'per run', 'largest columns (payload, values set)']
    rows: list[list[str]] = [header]
    total = max(breakdown.total, 1)
    for table in breakdown.tables:
        columns = ', '.join(
            f'{column.name} {size(column.bytes)} ({column.values:,})'
            for column in table.columns[:3]
            if column.bytes * 20 >= table.bytes or column is table.columns[0]
        )
        rows.append(
            [
                table.table,
                size(table.bytes),
                f'{table.bytes / total:.1%}',
                f'{table.bytes / max(raw_bytes, 1):.2f}x',
                f'{table.rows:,}',
                size(table.bytes / max(runs, 1)),
                columns,
            ]
        )
        if len(table.parts) > 1:
            rows.extend(['  ' + part.name, size(part.bytes), '', '', '', '', ''] for part in table.parts)
    if breakdown.unaccounted:
        rows.append(['(free pages, schema)', size(breakdown.unaccounted), f'{breakdown.unaccounted / total:.1%}'])
    rows.append(['total', size(breakdown.total), '100.0%', f'{breakdown.total / max(raw_bytes, 1):.2f}x'])
    widths = [max(len(row[index]) for row in rows if index < len(row)) for index in range(len(header))]
    lines = ['  '.join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip() for row in rows]
    lines.insert(1, '  '.join('-' * width for width in widths))
    title = (
        f'where the bytes go, {label} ({size(breakdown.total)} for {size(raw_bytes)} of raw message text, '
        f'{runs:,} runs; {breakdown.method}):'
    )
    return '\n'.join([title, *('  ' + line for line in lines)])


def where_bytes_go(
    breakdown: Breakdown, *, raw_bytes: int, runs: int, messages: int, compacted: int | None = None
) -> str:
    """One sentence for the "why a target is missed" list: bytes per run, the three largest tables, the floors.

    `compacted`: the store's size after a `VACUUM FULL` (`postgres_compacted`), when measured.
    """
    text = (
        f'{messages:,} messages in {runs:,} runs: {size(breakdown.total / max(runs, 1))} stored a run for'
        f' {messages / max(runs, 1):.1f} new messages ({size(raw_bytes / max(runs, 1))} of text)'
    )
    shares: list[str] = []
    for table in breakdown.tables[:3]:
        detail = f'{table.rows:,} rows'
        if table.columns:
            top = table.columns[0]
            detail += f'; {top.name} {size(top.bytes)} in {top.values:,} values'
        shares.append(f'{table.table} {table.bytes / max(breakdown.total, 1):.0%} ({detail})')
    text += '; ' + ', '.join(shares) + '; ' + '; '.join(floors(breakdown, raw_bytes=raw_bytes, runs=runs))
    if compacted is not None and compacted < breakdown.total:
        text += (
            f'; after a VACUUM FULL the store is {size(compacted)} ({compacted / max(raw_bytes, 1):.2f}x): '
            f'{size(breakdown.total - compacted)} is space of row versions that updates left dead (open tails and '
            'groups rewritten as words join them), which vacuum makes reusable but does not give back'
        )
    return text


def storage_reason(
    breakdowns: list[Breakdown], *, raw_bytes: int, runs: int, messages: int, compacted: int | None = None
) -> str:
    """The storage target's reason, measured on a run's stores: `where_bytes_go` of each, by backend.

    `compacted`: the Postgres store's size after a `VACUUM FULL`, when it was measured.
    """
    return '; '.join(
        f'{breakdown.backend}: '
        + where_bytes_go(
            breakdown,
            raw_bytes=raw_bytes,
            runs=runs,
            messages=messages,
            compacted=compacted if breakdown.backend == 'Postgres' else None,
        )
        for breakdown in breakdowns
    )


def floors(breakdown: Breakdown, *, raw_bytes: int, runs: int) -> list[str]:
    """What the store pays however its text is stored, each against the text: per-run rows, Postgres's maps.

    Measured on the breakdown: the tables with a row per run (`PER_RUN_TABLES`, with their indexes),
    the message bodies (`dr_messages`, with its index), and on Postgres the free-space and
    visibility maps of every table.
    """
    raw = max(raw_bytes, 1)
    by_name = {table.table: table for table in breakdown.tables}
    out: list[str] = []
    per_run = sum(by_name[name].bytes for name in PER_RUN_TABLES if name in by_name)
    if per_run:
        out.append(
            f'the rows every run has whatever it holds ({", ".join(n for n in PER_RUN_TABLES if n in by_name)},'
            f' with their indexes) take {size(per_run / max(runs, 1))} a run, {per_run / raw:.2f}x the text by'
            ' themselves'
        )
    bodies = by_name.get('dr_messages')
    if bodies is not None:
        out.append(f'the message bodies, each compressed alone, {bodies.bytes / raw:.2f}x')
    maps = sum(part.bytes for table in breakdown.tables for part in table.parts if part.name == MAPS)
    if maps:
        out.append(f"Postgres's free-space and visibility maps {size(maps)}, {maps / raw:.2f}x")
    return out
