"""Where a benchmark store lives, as a value another process can be handed, and what it occupies."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from durable_recall import StepStore
from durable_recall.index._chunks import OPEN, decode_chunk, pack_open, seal

__all__ = ('StoreSpec', 'StoreSize', 'clone_conversation')

_TABLES = (
    'dr_meta',
    'dr_runs',
    'dr_messages',
    'dr_snapshots',
    'dr_pending',
    'dr_index_scopes',
    'dr_index_runs',
    'dr_index_postings',
    'dr_index_hashes',
)
"""Every table of the store, the search index's included."""


@dataclass(frozen=True)
class StoreSpec:
    """A SQLite file, or a schema in a Postgres database."""

    kind: Literal['sqlite', 'postgres']
    target: str
    schema: str | None = None

    def open(self) -> StepStore:
        """A new store object on it."""
        if self.kind == 'sqlite':
            from durable_recall.stores import SqliteStepStore

            return SqliteStepStore(self.target)
        from durable_recall.stores import PostgresStepStore

        return PostgresStepStore(self.target, schema=self.schema)

    def to_json(self) -> str:
        """For a command line."""
        return json.dumps({'kind': self.kind, 'target': self.target, 'schema': self.schema})

    @classmethod
    def from_json(cls, text: str) -> StoreSpec:
        """The inverse of `to_json`."""
        data = json.loads(text)
        return cls(kind=data['kind'], target=data['target'], schema=data['schema'])

    @property
    def label(self) -> str:
        """`SQLite` or `Postgres`."""
        return 'SQLite' if self.kind == 'sqlite' else 'Postgres'


@dataclass(frozen=True)
class StoreSize:
    """Bytes a store occupies: the whole, and per table (indexes included)."""

    total: int
    tables: dict[str, int]


def sqlite_size(path: str | Path) -> StoreSize:
    """The file's size after a WAL checkpoint, and each table's pages (from `dbstat` when available)."""
    with sqlite3.connect(path) as conn:
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)')
        page_size: int = conn.execute('PRAGMA page_size').fetchone()[0]
        pages: int = conn.execute('PRAGMA page_count').fetchone()[0]
        tables: dict[str, int] = {}
        try:
            rows = conn.execute('SELECT name, SUM(pgsize) FROM dbstat GROUP BY name').fetchall()
        except sqlite3.OperationalError:
            rows = []
        for name, size in rows:
            owner = next((table for table in _TABLES if str(name).startswith(table)), 'other')
            tables[owner] = tables.get(owner, 0) + int(size)
    return StoreSize(total=page_size * pages, tables=tables)


def postgres_size(url: str, schema: str) -> StoreSize:
    """`pg_total_relation_size` of each of our tables in the schema (heap, TOAST and indexes)."""
    import psycopg

    tables: dict[str, int] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('VACUUM ANALYZE')
        for table in _TABLES:
            row = conn.execute('SELECT pg_total_relation_size(%s::regclass)', (f'"{schema}".{table}',)).fetchone()
            tables[table] = int(row[0]) if row is not None else 0
    return StoreSize(total=sum(tables.values()), tables=tables)


def clone_conversation(spec: StoreSpec, source: str, copies: int, *, first: int = 1) -> int:
    """Copy every row of conversation `source` `copies` times, as new conversations with new run ids.

    Cheap filler for "other conversations": the copies have the same size and shape as a generated
    conversation. Copies are numbered from `first` (ids end in `~copy<n>`), so a later call
    continues the numbering. Returns the number of message rows added.
    """
    numbers = range(first, first + copies)
    if spec.kind == 'sqlite':
        return _clone_sqlite(spec.target, source, numbers)
    return _clone_postgres(spec, source, numbers)


def _clone_sqlite(path: str, source: str, numbers: range) -> int:
    added = 0
    with sqlite3.connect(path, isolation_level=None) as conn:
        runs = 'SELECT run_id FROM dr_runs WHERE conversation_id = ?'
        for copy in numbers:
            suffix = f'~copy{copy}'
            conn.execute('BEGIN IMMEDIATE')
            conn.execute(
                'INSERT INTO dr_runs (run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token)'
                ' SELECT run_id || ?, conversation_id || ?, parent_run_id, agent_name, metadata, started_at, token || ?'
                ' FROM dr_runs WHERE conversation_id = ?',
                (suffix, suffix, suffix, source),
            )
            cursor = conn.execute(
                'INSERT INTO dr_messages (run_id, seq, body, ref_run_id, ref_seq)'
                ' SELECT run_id || ?, seq, body, ref_run_id || ?, ref_seq FROM dr_messages'
                f' WHERE run_id IN ({runs})',
                (suffix, suffix, source),
            )
            added += cursor.rowcount
            conn.execute(
                'INSERT INTO dr_snapshots (run_id, idx, step_index, state, saved_at, ranges, size)'
                ' SELECT run_id || ?, idx, step_index, state, saved_at, ranges, size FROM dr_snapshots'
                f' WHERE run_id IN ({runs})',
                (suffix, source),
            )
            _clone_sqlite_index(conn, source, suffix)
            conn.execute('COMMIT')
    return added


def _clone_sqlite_index(conn: sqlite3.Connection, source: str, suffix: str) -> None:
    """Copy a conversation's search index too, so the copy weighs on the index tables as a real one would."""
    found = conn.execute('SELECT scope_key FROM dr_index_scopes WHERE conversation_id = ?', (source,)).fetchone()
    if found is None:
        return
    old = found[0]
    conn.execute(
        'INSERT INTO dr_index_scopes (conversation_id, generation, docs, length)'
        ' SELECT conversation_id || ?, generation, docs, length FROM dr_index_scopes WHERE scope_key = ?',
        (suffix, old),
    )
    (new,) = conn.execute(
        'SELECT scope_key FROM dr_index_scopes WHERE conversation_id = ?', (source + suffix,)
    ).fetchone()
    conn.execute(
        'INSERT INTO dr_index_runs (run_id, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
        ' SELECT run_id || ?, ?, started_at, seen, first, lengths, seqs, roles, times, state'
        ' FROM dr_index_runs WHERE scope_key = ? ORDER BY run_key',
        (suffix, new, old),
    )
    keys = dict(
        conn.execute(
            'SELECT o.run_key, n.run_key FROM dr_index_runs o JOIN dr_index_runs n ON n.run_id = o.run_id || ?'
            ' WHERE o.scope_key = ?',
            (suffix, old),
        ).fetchall()
    )
    copied = (
        (new, term, number, _renumbered(number, data, keys))
        for term, number, data in conn.execute(
            'SELECT term, chunk, postings FROM dr_index_postings WHERE scope_key = ?', (old,)
        )
    )
    conn.executemany(
        'INSERT INTO dr_index_postings (scope_key, term, chunk, postings) VALUES (?, ?, ?, ?)', list(copied)
    )
    mapping = (
        ' FROM {table} t JOIN dr_index_runs o ON o.run_key = t.run_key'
        ' JOIN dr_index_runs n ON n.run_id = o.run_id || ? WHERE t.scope_key = ?'
    )
    conn.execute(
        'INSERT INTO dr_index_hashes (scope_key, hash, run_key) SELECT ?, t.hash, n.run_key'
        + mapping.format(table='dr_index_hashes'),
        (new, suffix, old),
    )


def _renumbered(number: int, data: bytes, keys: dict[int, int]) -> bytes:
    """A postings chunk with its run keys mapped to the copy's (in the same order, so it stays sorted)."""
    entries = [(keys[key >> 32] << 32 | key & 0xFFFFFFFF, tf, n) for key, tf, n in decode_chunk(number, data).entries()]
    if number != OPEN:
        return seal(entries)
    return b''.join(pack_open(key >> 32, [(key & 0xFFFFFFFF, tf, n)]) for key, tf, n in entries)


def _clone_postgres(spec: StoreSpec, source: str, numbers: range) -> int:
    import psycopg
    from psycopg import sql

    added = 0
    schema = sql.Identifier(spec.schema or 'public')
    with psycopg.connect(spec.target) as conn:
        for copy in numbers:
            suffix = f'~copy{copy}'
            with conn.transaction():
                conn.execute(
                    sql.SQL(
                        'INSERT INTO {s}.dr_runs (run_id, conversation_id, parent_run_id, agent_name, metadata,'
                        ' started_at, token) SELECT run_id || %(x)s, conversation_id || %(x)s, parent_run_id,'
                        ' agent_name, metadata, started_at, token || %(x)s FROM {s}.dr_runs'
                        ' WHERE conversation_id = %(c)s'
                    ).format(s=schema),
                    {'x': suffix, 'c': source},
                )
                cursor = conn.execute(
                    sql.SQL(
                        'INSERT INTO {s}.dr_messages (run_id, seq, body, data, ref_run_id, ref_seq)'
                        ' SELECT m.run_id || %(x)s, m.seq, m.body, m.data, m.ref_run_id || %(x)s, m.ref_seq'
                        ' FROM {s}.dr_messages m JOIN {s}.dr_runs r ON r.run_id = m.run_id'
                        ' WHERE r.conversation_id = %(c)s'
                    ).format(s=schema),
                    {'x': suffix, 'c': source},
                )
                added += cursor.rowcount
                conn.execute(
                    sql.SQL(
                        'INSERT INTO {s}.dr_snapshots (run_id, idx, step_index, state, saved_at, ranges, size)'
                        ' SELECT p.run_id || %(x)s, p.idx, p.step_index, p.state, p.saved_at, p.ranges, p.size'
                        ' FROM {s}.dr_snapshots p JOIN {s}.dr_runs r ON r.run_id = p.run_id'
                        ' WHERE r.conversation_id = %(c)s'
                    ).format(s=schema),
                    {'x': suffix, 'c': source},
                )
                _clone_postgres_index(conn, schema, source, suffix)
    return added


def _clone_postgres_index(conn: Any, schema: Any, source: str, suffix: str) -> None:
    """As `_clone_sqlite_index`, on Postgres."""
    from psycopg import sql

    def run(query: str, params: Any = None) -> Any:
        return conn.execute(sql.SQL(query).format(s=schema), params)  # type: ignore[arg-type]

    found = run('SELECT scope_key FROM {s}.dr_index_scopes WHERE conversation_id = %s', (source,)).fetchone()
    if found is None:
        return
    old = found[0]
    (new,) = run(
        'INSERT INTO {s}.dr_index_scopes (conversation_id, generation, docs, length)'
        ' SELECT conversation_id || %s, generation, docs, length FROM {s}.dr_index_scopes WHERE scope_key = %s'
        ' RETURNING scope_key',
        (suffix, old),
    ).fetchone()
    run(
        'INSERT INTO {s}.dr_index_runs (run_id, scope_key, started_at, seen, first, lengths, seqs, roles, times, state)'
        ' SELECT run_id || %s, %s, started_at, seen, first, lengths, seqs, roles, times, state'
        ' FROM {s}.dr_index_runs WHERE scope_key = %s ORDER BY run_key',
        (suffix, new, old),
    )
    keys = dict(
        run(
            'SELECT o.run_key, n.run_key FROM {s}.dr_index_runs o JOIN {s}.dr_index_runs n'
            ' ON n.run_id = o.run_id || %s WHERE o.scope_key = %s',
            (suffix, old),
        ).fetchall()
    )
    rows = run('SELECT term, chunk, postings FROM {s}.dr_index_postings WHERE scope_key = %s', (old,)).fetchall()
    with conn.cursor() as cursor:
        cursor.executemany(
            sql.SQL(
                'INSERT INTO {s}.dr_index_postings (scope_key, term, chunk, postings) VALUES (%s, %s, %s, %s)'
            ).format(s=schema),
            [(new, term, number, _renumbered(number, bytes(data), keys)) for term, number, data in rows],
        )
    run(
        'INSERT INTO {s}.dr_index_hashes (scope_key, hash, run_key) SELECT %s, t.hash, n.run_key'
        ' FROM {s}.dr_index_hashes t JOIN {s}.dr_index_runs o ON o.run_key = t.run_key'
        ' JOIN {s}.dr_index_runs n ON n.run_id = o.run_id || %s WHERE t.scope_key = %s',
        (new, suffix, old),
    )
