"""Where a benchmark store lives, as a value another process can be handed, and what it occupies.

Also cheap filler for "other conversations": copies of a generated conversation. The runs,
snapshots and message log are copied row for row (`INSERT ... SELECT`, one statement per table).
The search index is not: it is read through the store's `IndexStorage` and written back through
the store's own commit (`commit_many`), as catch-up writes it, so that this module holds no copy
of the index's layout or of how it is written, and the copies' index stays what the store would
have built.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Coroutine, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from durable_recall import StepStore
from durable_recall.index import IndexedRunRow, IndexStorage, Posting, RunCommit, decode_chunk, decode_ints
from durable_recall.stores._snapshot_sum import snapshot_checksum

__all__ = ('StoreSize', 'StoreSpec', 'clone_conversation', 'postgres_size', 'sqlite_size')

_PREFIX = 'dr_'
"""Every table of the store starts with it, the search index's included."""

_COPIED = ('runs', 'messages', 'message_refs', 'snapshots')
"""The tables holding a conversation's runs row for row; `message_refs` from schema version 5 on."""

_SUFFIXED = frozenset({'run_id', 'ref_run_id', 'conversation_id', 'token'})
"""Columns naming a run or a conversation (or a run's unique token): a copy's own ids end in its suffix."""

_NUMBERED = frozenset({'run_no', 'ref_run_no'})
"""Columns naming a run by the number SQLite gives it (SQLite from schema version 13): a copy names its own run's."""

_BATCH_RUNS = 64
"""Runs committed together, as catch-up batches them, so the copies' chunks are laid out as `update_index` lays them."""


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
    with closing(sqlite3.connect(path)) as conn:
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)')
        page_size: int = conn.execute('PRAGMA page_size').fetchone()[0]
        pages: int = conn.execute('PRAGMA page_count').fetchone()[0]
        names = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        # Longest first, so that a table's indexes (named after it) go to it and not to a shorter name.
        ours = sorted((name for name in names if name.startswith(_PREFIX)), key=len, reverse=True)
        tables: dict[str, int] = {}
        try:
            rows = conn.execute('SELECT name, SUM(pgsize) FROM dbstat GROUP BY name').fetchall()
        except sqlite3.OperationalError:
            rows = []
        for name, size in rows:
            owner = next((table for table in ours if str(name).startswith(table)), 'other')
            tables[owner] = tables.get(owner, 0) + int(size)
    return StoreSize(total=page_size * pages, tables=tables)


def postgres_size(url: str, schema: str) -> StoreSize:
    """`pg_total_relation_size` of each of our tables in the schema (heap, TOAST and indexes)."""
    import psycopg

    tables: dict[str, int] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute('VACUUM ANALYZE')
        rows = conn.execute(
            'SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c'
            " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'"
            ' AND left(c.relname, 3) = %s ORDER BY c.relname',
            (schema, _PREFIX),
        ).fetchall()
        for name, size in rows:
            tables[name] = int(size)
    return StoreSize(total=sum(tables.values()), tables=tables)


def clone_conversation(spec: StoreSpec, source: str, copies: int, *, first: int = 1) -> int:
    """Copy conversation `source` `copies` times, as new conversations with new run ids.

    The copies have the same size and shape as a generated conversation, their index included.
    Copies are numbered from `first` (ids end in `~copy<n>`), so a later call continues the
    numbering. Returns the number of message rows added.
    """
    suffixes = [f'~copy{copy}' for copy in range(first, first + copies)]
    with _Database.connect(spec) as db:
        added = 0
        for suffix in suffixes:
            with db.transaction():
                added += db.copy_rows(source, suffix)
        terms = db.terms(source)
        hashes = db.hashes(source)
    _run_in_a_thread(_copy_index(spec, source, suffixes, terms, hashes))
    return added


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchall(self) -> list[Any]: ...


class _Database:
    """The store's tables through a plain driver connection: `{runs}`-style table names, `?` placeholders."""

    def __init__(self, spec: StoreSpec, conn: Any) -> None:
        self._spec = spec
        self._conn = conn

    @classmethod
    @contextmanager
    def connect(cls, spec: StoreSpec) -> Generator[_Database]:
        if spec.kind == 'sqlite':
            with closing(sqlite3.connect(spec.target, isolation_level=None)) as conn:
                conn.create_function('dr_snapshot_checksum', 5, snapshot_checksum, deterministic=True)
                yield cls(spec, conn)
            return
        import psycopg

        with psycopg.connect(spec.target, autocommit=True) as conn:
            yield cls(spec, conn)

    @contextmanager
    def transaction(self) -> Generator[None]:
        if self._spec.kind == 'postgres':
            with self._conn.transaction():
                yield
            return
        self._conn.execute('BEGIN IMMEDIATE')
        try:
            yield
        except BaseException:
            self._conn.execute('ROLLBACK')
            raise
        self._conn.execute('COMMIT')

    def query(self, template: str, *params: Any) -> _Cursor:
        if self._spec.kind == 'sqlite':
            return self._conn.execute(template.format_map(_Tables('')), params)
        quoted = (self._spec.schema or 'public').replace('"', '""')
        schema = f'"{quoted}".'
        return self._conn.execute(template.format_map(_Tables(schema)).replace('?', '%s').encode(), params)

    def copy_rows(self, source: str, suffix: str) -> int:
        """Copy the conversation's runs, message log and snapshots; the message rows added.

        Every column is copied as it is but the ids (`_SUFFIXED`), which get the suffix, so the
        copy follows the schema of the store at hand (a table it lacks is skipped).
        """
        added = 0
        for table in _COPIED:
            columns = [column for column in self.columns(table) if not (table == 'runs' and column == 'run_no')]
            if not columns:
                continue
            names = ', '.join(f'"{column}"' for column in columns)
            values = ', '.join(_copied_value(column, self._spec.kind) for column in columns)
            if table == 'runs':
                where = 'x.conversation_id = ?'
            elif 'run_no' in columns:
                where = 'x.run_no IN (SELECT run_no FROM {runs} WHERE conversation_id = ?)'
            else:
                where = 'x.run_id IN (SELECT run_id FROM {runs} WHERE conversation_id = ?)'
            suffixes = [suffix] * sum(
                column in _SUFFIXED or column in _NUMBERED or column == 'checksum' for column in columns
            )
            query = f'INSERT INTO {{{table}}} ({names}) SELECT {values} FROM {{{table}}} AS x WHERE {where}'
            count = self.query(query, *suffixes, source).rowcount
            if table == 'messages':
                added = count
        return added

    def columns(self, table: str) -> list[str]:
        """The columns of one of the store's tables, in order; none when the schema has no such table."""
        name = f'{_PREFIX}{table}'
        if self._spec.kind == 'sqlite':
            return [str(row[1]) for row in self._conn.execute(f'PRAGMA table_info("{name}")').fetchall()]
        rows = self._conn.execute(
            'SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s'
            ' ORDER BY ordinal_position',
            (self._spec.schema or 'public', name),
        ).fetchall()
        return [str(column) for (column,) in rows]

    def terms(self, source: str) -> list[str]:
        """Every term the conversation's index holds postings of (the index port lists none)."""
        rows = self.query(
            'SELECT DISTINCT term FROM {index_postings}'
            ' WHERE scope_key = (SELECT scope_key FROM {index_scopes} WHERE conversation_id = ?)',
            source,
        ).fetchall()
        return sorted(term for (term,) in rows)

    def hashes(self, source: str) -> dict[str, list[bytes]]:
        """The content hashes each run of the conversation holds first (the index port reads none back)."""
        rows = self.query(
            'SELECT i.run_id, h.hash FROM {index_hashes} AS h JOIN {index_runs} AS i ON i.run_key = h.run_key'
            ' WHERE h.scope_key = (SELECT scope_key FROM {index_scopes} WHERE conversation_id = ?)',
            source,
        ).fetchall()
        held: dict[str, list[bytes]] = {}
        for run_id, digest in rows:
            held.setdefault(run_id, []).append(bytes(digest))
        return held


def _copied_value(column: str, kind: str) -> str:
    """What a copy's row holds in `column`: the source row's value, its id suffixed, or the copy's run number.

    A snapshot's checksum covers its run id (schema version 14): the copy's is computed for its own.
    """
    if column == 'checksum':
        copied = 'x.run_id || ?'
        if kind == 'sqlite':
            return f'dr_snapshot_checksum({copied}, x.idx, x.state, x.ranges, x.size)'
        return (
            f"left(md5(x.idx::text || '|' || x.state || '|' || x.size::text || '|' || x.ranges || '|' || {copied}), 16)"
        )
    if column in _SUFFIXED:
        return f'x."{column}" || ?'
    if column in _NUMBERED:
        # The number SQLite gave the copy's run (its runs are copied first): the source run's id, suffixed.
        source = f'(SELECT s.run_id FROM {{runs}} AS s WHERE s.run_no = x."{column}")'
        return f'(SELECT c.run_no FROM {{runs}} AS c WHERE c.run_id = {source} || ?)'
    return f'x."{column}"'


class _Tables(dict[str, str]):
    """`{name}` -> the table's name, schema-qualified when one is given."""

    def __init__(self, schema: str) -> None:
        super().__init__()
        self._schema = schema

    def __missing__(self, name: str) -> str:
        return f'{self._schema}{_PREFIX}{name}'


async def _copy_index(
    spec: StoreSpec, source: str, suffixes: Sequence[str], terms: Sequence[str], hashes: dict[str, list[bytes]]
) -> None:
    """Index each copy as the source is indexed: its runs' rows and postings, committed by the store."""
    store = spec.open()
    try:
        index = store.index_storage()
        runs = await _indexed_runs(index, source)
        postings = await _run_postings(index, source, runs, terms)
        for suffix in suffixes:
            changes = [_copy(run, source + suffix, suffix, postings[run.run_id], hashes) for run in runs]
            for start in range(0, len(changes), _BATCH_RUNS):
                await index.commit_many(changes[start : start + _BATCH_RUNS])
    finally:
        await store.aclose()


async def _indexed_runs(index: IndexStorage, source: str) -> list[IndexedRunRow]:
    """The conversation's index rows, whole, oldest first."""
    listed = await index.scope_runs(source, all_scopes=False)
    rows = await index.load_runs([row.run_id for row in listed])
    return [rows[row.run_id] for row in listed]


async def _run_postings(
    index: IndexStorage, source: str, runs: Sequence[IndexedRunRow], terms: Sequence[str]
) -> dict[str, dict[str, list[Posting]]]:
    """Run id -> term -> the run's postings of it, positions increasing."""
    by_key = {run.run_key: run.run_id for run in runs}
    found: dict[str, dict[str, list[Posting]]] = {run.run_id: {} for run in runs}
    for term, chunks in (await index.postings(terms, source, all_scopes=False)).items():
        for chunk in chunks:
            for key, tf, length in decode_chunk(chunk.chunk, chunk.postings).entries():
                run_id = by_key.get(key >> 32)
                if run_id is not None:
                    found[run_id].setdefault(term, []).append((key & 0xFFFFFFFF, tf, length))
    for per_term in found.values():
        for held in per_term.values():
            held.sort()
    return found


def _copy(
    run: IndexedRunRow,
    conversation_id: str,
    suffix: str,
    postings: dict[str, list[Posting]],
    hashes: dict[str, list[bytes]],
) -> RunCommit:
    """A first catch-up of the run's copy that leaves it indexed exactly as the run is."""
    own = decode_ints(run.lengths)[run.first :]
    return RunCommit(
        run_id=run.run_id + suffix,
        conversation_id=conversation_id,
        started_at=run.started_at,
        expected_seen=-2,
        seen=run.seen,
        upto=run.seen,
        first=run.first,
        lengths=run.lengths,
        seqs=run.seqs,
        roles=run.roles,
        times=run.times,
        state=run.state,
        postings_add=postings,
        hashes=hashes.get(run.run_id, []),
        docs_delta=len(own),
        length_delta=sum(own),
    )


def _run_in_a_thread(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run an async store's work to completion from sync code, whether or not an event loop is running here."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coroutine).result()
