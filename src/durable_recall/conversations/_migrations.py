"""The SQL conversation stores' schema, as an ordered list of migrations per dialect.

Entry `n` of a list moves a database from conversation schema version `n` to `n + 1`. A store
applies the entries past the version recorded in `drc_meta` when it first uses a database, inside
one write transaction (SQLite: `BEGIN IMMEDIATE`; Postgres: under an advisory lock), so concurrent
workers never apply one twice. The tables are prefixed `drc_` and versioned apart from the step
store's `dr_` tables, so both stores can share one SQLite file or one Postgres schema and upgrade
independently. Table names are compatibility data: a released migration is never edited, only
followed by a new one.

Version 1:

* `drc_records`: a row per conversation (`ConversationRecord`), keyed by `conversation_id`, with
  `head_lineage` (the lineage of `head_id`, see `_rows`) and indexes for listing by `updated_at`,
  with or without `scope`, and for finding the records of a lineage.
* `drc_branches`: the record's `branches`, a row per tip with its position and lineage.
* `drc_entries`: a row per `ConversationEntry`: id, parent id, lineage, kind and message body. A
  lineage index lets a delete walk only the entries that could have become unreachable.

Postgres statements name tables through `{meta}`, `{records}`, `{branches}` and `{entries}`, which
the store fills with (optionally schema-qualified) identifiers; ids use the "C" collation so that
Postgres compares them by code point, as Python and SQLite do.
"""

from __future__ import annotations

from typing import LiteralString

from ..base import StoreConfigurationError

__all__ = (
    'POSTGRES_META',
    'POSTGRES_MIGRATIONS',
    'SCHEMA_VERSION',
    'SQLITE_META',
    'SQLITE_MIGRATIONS',
    'check_version',
)

SQLITE_META: LiteralString = (
    'CREATE TABLE IF NOT EXISTS drc_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID'
)
"""Created before the version is read: it is where the version lives."""

SQLITE_MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    (
        'CREATE TABLE drc_records ('
        ' conversation_id TEXT PRIMARY KEY NOT NULL,'
        ' scope TEXT,'
        ' head_id TEXT,'
        ' head_lineage TEXT,'
        ' revision TEXT NOT NULL,'
        ' updated_at TEXT NOT NULL,'
        ' forked_from TEXT,'
        ' forked_at TEXT,'
        ' usage TEXT NOT NULL,'
        ' deferred TEXT,'
        ' format_version INTEGER NOT NULL'
        ') WITHOUT ROWID',
        'CREATE INDEX drc_records_by_updated ON drc_records (updated_at, conversation_id)',
        'CREATE INDEX drc_records_by_scope ON drc_records (scope, updated_at, conversation_id)',
        'CREATE INDEX drc_records_by_lineage ON drc_records (head_lineage)',
        'CREATE TABLE drc_branches ('
        ' conversation_id TEXT NOT NULL,'
        ' position INTEGER NOT NULL,'
        ' entry_id TEXT NOT NULL,'
        ' lineage TEXT NOT NULL,'
        ' PRIMARY KEY (conversation_id, position)'
        ') WITHOUT ROWID',
        'CREATE INDEX drc_branches_by_lineage ON drc_branches (lineage)',
        'CREATE TABLE drc_entries ('
        ' entry_id TEXT PRIMARY KEY NOT NULL,'
        ' parent_id TEXT,'
        ' lineage TEXT NOT NULL,'
        ' kind TEXT NOT NULL,'
        ' body BLOB NOT NULL'
        ')',
        'CREATE INDEX drc_entries_by_lineage ON drc_entries (lineage)',
    ),
)

POSTGRES_META: LiteralString = 'CREATE TABLE IF NOT EXISTS {meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)'
"""Created before the version is read: it is where the version lives."""

POSTGRES_MIGRATIONS: tuple[tuple[LiteralString, ...], ...] = (
    (
        'CREATE TABLE {records} ('
        ' conversation_id TEXT COLLATE "C" PRIMARY KEY,'
        ' scope TEXT COLLATE "C",'
        ' head_id TEXT COLLATE "C",'
        ' head_lineage TEXT COLLATE "C",'
        ' revision TEXT COLLATE "C" NOT NULL,'
        ' updated_at TIMESTAMPTZ NOT NULL,'
        ' forked_from TEXT COLLATE "C",'
        ' forked_at TEXT COLLATE "C",'
        ' usage TEXT NOT NULL,'
        ' deferred TEXT,'
        ' format_version INTEGER NOT NULL'
        ')',
        'CREATE INDEX drc_records_by_updated ON {records} (updated_at, conversation_id)',
        'CREATE INDEX drc_records_by_scope ON {records} (scope, updated_at, conversation_id)',
        'CREATE INDEX drc_records_by_lineage ON {records} (head_lineage)',
        'CREATE TABLE {branches} ('
        ' conversation_id TEXT COLLATE "C" NOT NULL,'
        ' position INTEGER NOT NULL,'
        ' entry_id TEXT COLLATE "C" NOT NULL,'
        ' lineage TEXT COLLATE "C" NOT NULL,'
        ' PRIMARY KEY (conversation_id, position)'
        ')',
        'CREATE INDEX drc_branches_by_lineage ON {branches} (lineage)',
        'CREATE TABLE {entries} ('
        ' entry_id TEXT COLLATE "C" PRIMARY KEY,'
        ' parent_id TEXT COLLATE "C",'
        ' lineage TEXT COLLATE "C" NOT NULL,'
        ' kind TEXT NOT NULL,'
        ' body BYTEA NOT NULL'
        ')',
        'ALTER TABLE {entries} ALTER COLUMN body SET STORAGE EXTERNAL',
        'CREATE INDEX drc_entries_by_lineage ON {entries} (lineage)',
    ),
)

SCHEMA_VERSION = len(SQLITE_MIGRATIONS)
"""The conversation schema version this release writes and understands."""

assert len(POSTGRES_MIGRATIONS) == SCHEMA_VERSION, 'both dialects must be at the same schema version'


def check_version(found: int, where: str) -> None:
    """Refuse a database that a newer release migrated past what this one understands.

    Raises:
        StoreConfigurationError: `found` is newer than `SCHEMA_VERSION`.
    """
    if found > SCHEMA_VERSION:
        raise StoreConfigurationError(
            f'{where} holds durable-recall conversation schema version {found}, but this release understands '
            f'up to version {SCHEMA_VERSION}: upgrade durable-recall on this host (a newer release has already '
            'migrated the database), or point the store at another database.'
        )
