"""The SQL stores' schema, as an ordered list of migrations per dialect.

Entry `n` of a list moves a database from schema version `n` to `n + 1`; a store applies the
entries past the version recorded in `dr_meta` when it opens a database, inside one write
transaction, so concurrent workers never apply one twice. Table names are compatibility data:
a released migration is never edited, only followed by a new one.

Postgres statements name tables through `{meta}`, `{runs}`, `{messages}` and `{snapshots}`
placeholders, which the store fills with (optionally schema-qualified) identifiers. Id columns
use the "C" collation so that Postgres sorts them by code point, as Python and SQLite do.
"""

from __future__ import annotations

from typing import LiteralString

from .._errors import StoreConfigurationError

__all__ = (
    'POSTGRES_META',
    'POSTGRES_MIGRATIONS',
    'SCHEMA_VERSION',
    'SQLITE_META',
    'SQLITE_MIGRATIONS',
    'check_version',
)

SQLITE_META: LiteralString = (
    'CREATE TABLE IF NOT EXISTS dr_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID'
)
"""Created before the version is read: it is where the version lives."""

SQLITE_MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    (
        'CREATE TABLE dr_runs ('
        ' run_id TEXT PRIMARY KEY NOT NULL,'
        ' conversation_id TEXT,'
        ' parent_run_id TEXT,'
        ' agent_name TEXT,'
        ' metadata TEXT NOT NULL,'
        ' started_at TEXT NOT NULL,'
        ' token TEXT NOT NULL'
        ') WITHOUT ROWID',
        'CREATE INDEX dr_runs_by_started ON dr_runs (started_at, run_id)',
        'CREATE INDEX dr_runs_by_conversation ON dr_runs (conversation_id, started_at, run_id)',
        'CREATE INDEX dr_runs_by_parent ON dr_runs (parent_run_id, started_at, run_id)',
        'CREATE TABLE dr_messages ('
        ' run_id TEXT NOT NULL,'
        ' seq INTEGER NOT NULL,'
        ' body TEXT NOT NULL,'
        ' PRIMARY KEY (run_id, seq)'
        ') WITHOUT ROWID',
        'CREATE TABLE dr_snapshots ('
        ' run_id TEXT NOT NULL,'
        ' idx INTEGER NOT NULL,'
        ' step_index INTEGER NOT NULL,'
        ' state TEXT NOT NULL,'
        ' saved_at TEXT NOT NULL,'
        ' ranges TEXT NOT NULL,'
        ' size INTEGER NOT NULL,'
        ' PRIMARY KEY (run_id, idx)'
        ') WITHOUT ROWID',
    ),
)

POSTGRES_META: LiteralString = 'CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)'
"""Created before the version is read: it is where the version lives."""

POSTGRES_MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    (
        'CREATE TABLE {runs} ('
        ' run_id TEXT COLLATE "C" PRIMARY KEY,'
        ' conversation_id TEXT COLLATE "C",'
        ' parent_run_id TEXT COLLATE "C",'
        ' agent_name TEXT,'
        ' metadata TEXT NOT NULL,'
        ' started_at TIMESTAMPTZ NOT NULL,'
        ' token TEXT NOT NULL'
        ')',
        'CREATE INDEX dr_runs_by_started ON {runs} (started_at, run_id)',
        'CREATE INDEX dr_runs_by_conversation ON {runs} (conversation_id, started_at, run_id)',
        'CREATE INDEX dr_runs_by_parent ON {runs} (parent_run_id, started_at, run_id)',
        'CREATE TABLE {messages} ('
        ' run_id TEXT COLLATE "C" NOT NULL,'
        ' seq INTEGER NOT NULL,'
        ' body TEXT NOT NULL,'
        ' PRIMARY KEY (run_id, seq)'
        ')',
        'CREATE TABLE {snapshots} ('
        ' run_id TEXT COLLATE "C" NOT NULL,'
        ' idx INTEGER NOT NULL,'
        ' step_index INTEGER NOT NULL,'
        ' state TEXT NOT NULL,'
        ' saved_at TIMESTAMPTZ NOT NULL,'
        ' ranges TEXT NOT NULL,'
        ' size INTEGER NOT NULL,'
        ' PRIMARY KEY (run_id, idx)'
        ')',
    ),
)

SCHEMA_VERSION = len(SQLITE_MIGRATIONS)
"""The schema version this release writes and understands."""

assert len(POSTGRES_MIGRATIONS) == SCHEMA_VERSION, 'both dialects must be at the same schema version'


def check_version(found: int, where: str) -> None:
    """Refuse a database that a newer release migrated past what this one understands.

    Raises:
        StoreConfigurationError: `found` is newer than `SCHEMA_VERSION`.
    """
    if found > SCHEMA_VERSION:
        raise StoreConfigurationError(
            f'{where} holds durable-recall schema version {found}, but this release understands up to '
            f'version {SCHEMA_VERSION}: upgrade durable-recall on this host (a newer release has '
            'already migrated the database), or point the store at another database.'
        )
