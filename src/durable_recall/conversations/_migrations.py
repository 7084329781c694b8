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

Version 2, the search index over the entry log (the step store's index layout, `drc_` tables; see
`durable_recall.search`'s conversation corpus):

* `drc_runs`: the runs the search sees (a conversation's live history, run id = conversation id;
  each branch with messages of its own, run id `'<conversation id>#branch:<tip>'`): the
  conversation, its `ConversationStore` scope, the run's start, its record's metadata, the entry it
  ends at (`head`), how many leading entries of that line it leaves to other runs (`skip`), and a
  token new each time the run is registered (a process's cached messages of an older one never match).
* `drc_index_conversations`: what each conversation's runs were last derived from (revision, head,
  its depth, branch tips), so an unchanged conversation costs one comparison.
* `drc_pending`, `drc_index_scopes`, `drc_index_runs`, `drc_index_postings`, `drc_index_hashes`:
  the index tables themselves, as the step store's `dr_` ones, and `index_generation` in `drc_meta`.

Version 3 rebuilds the index (`INDEX_VERSION` 6, the step store's schema version 11: open tails of
postings hold varint records): it empties the index tables, `drc_runs` and
`drc_index_conversations`, so the next search derives each conversation's runs again from its
entries and indexes them.

Version 4 (Postgres only, as the step store's version 12) keeps rare words' open tails many to a
row, in `drc_index_groups`, with each scope's bucket count in `drc_index_scopes.group_bits`.

Version 5 adds a conversation's details to `drc_records`: `title` (text) and `metadata` (JSON text,
canonical: sorted keys), both nullable, so every stored conversation upgrades in place with neither
set. They are what `ConversationStore.update` changes (pydantic-ai-slim>=2.78), and only it: a save
never writes them.

Postgres statements name tables through `{meta}`, `{records}`, `{branches}`, `{entries}` and the
index tables' names (`{runs}`, `{pending}`, `{index_*}`, `{index_conversations}`), which the store
fills with (optionally schema-qualified) identifiers; ids use the "C" collation so that
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
    (
        'CREATE TABLE drc_runs ('
        ' run_id TEXT PRIMARY KEY NOT NULL,'
        ' conversation_id TEXT NOT NULL,'
        ' scope TEXT,'
        ' started_at TEXT NOT NULL,'
        ' metadata TEXT NOT NULL,'
        ' head TEXT,'
        ' skip INTEGER NOT NULL,'
        ' token TEXT NOT NULL'
        ') WITHOUT ROWID',
        'CREATE INDEX drc_runs_by_conversation ON drc_runs (conversation_id)',
        'CREATE TABLE drc_index_conversations ('
        ' conversation_id TEXT PRIMARY KEY NOT NULL,'
        ' revision TEXT NOT NULL,'
        ' head TEXT,'
        ' depth INTEGER NOT NULL,'
        ' tips TEXT NOT NULL,'
        ' timed INTEGER NOT NULL'
        ') WITHOUT ROWID',
        'CREATE TABLE drc_pending ('
        ' conversation_id TEXT NOT NULL,'
        ' run_id TEXT NOT NULL,'
        ' upto INTEGER NOT NULL,'
        ' PRIMARY KEY (conversation_id, run_id)'
        ') WITHOUT ROWID',
        'CREATE TABLE drc_index_scopes ('
        ' scope_key INTEGER PRIMARY KEY,'
        ' conversation_id TEXT UNIQUE,'
        ' generation TEXT NOT NULL,'
        ' docs INTEGER NOT NULL,'
        ' length INTEGER NOT NULL'
        ')',
        'CREATE TABLE drc_index_runs ('
        ' run_key INTEGER PRIMARY KEY,'
        ' run_id TEXT NOT NULL UNIQUE,'
        ' scope_key INTEGER NOT NULL,'
        ' started_at TEXT NOT NULL,'
        ' seen INTEGER NOT NULL,'
        ' first INTEGER NOT NULL,'
        ' lengths BLOB NOT NULL,'
        ' seqs BLOB NOT NULL,'
        ' roles BLOB NOT NULL,'
        ' times BLOB NOT NULL,'
        ' state BLOB NOT NULL'
        ')',
        'CREATE INDEX drc_index_runs_by_scope ON drc_index_runs (scope_key, started_at, run_id)',
        'CREATE TABLE drc_index_postings ('
        ' scope_key INTEGER NOT NULL,'
        ' term TEXT NOT NULL,'
        ' chunk INTEGER NOT NULL,'
        ' postings BLOB NOT NULL,'
        ' PRIMARY KEY (scope_key, term, chunk)'
        ') WITHOUT ROWID',
        'CREATE TABLE drc_index_hashes ('
        ' scope_key INTEGER NOT NULL,'
        ' hash BLOB NOT NULL,'
        ' run_key INTEGER NOT NULL,'
        ' PRIMARY KEY (scope_key, hash)'
        ') WITHOUT ROWID',
        "INSERT OR IGNORE INTO drc_meta (key, value) VALUES ('index_generation', lower(hex(randomblob(16))))",
    ),
    (
        # Version 3: the index's open tails hold varint records (`INDEX_VERSION` 6): forget what the
        # index derived, so the next search registers each conversation's runs again and rebuilds it.
        'DELETE FROM drc_index_postings',
        'DELETE FROM drc_index_hashes',
        'DELETE FROM drc_index_runs',
        'DELETE FROM drc_index_scopes',
        'DELETE FROM drc_pending',
        'DELETE FROM drc_runs',
        'DELETE FROM drc_index_conversations',
        "UPDATE drc_meta SET value = lower(hex(randomblob(16))) WHERE key = 'index_generation'",
    ),
    (
        # Version 4 changes only Postgres (rare words' grouped tails): SQLite keeps a row per tail.
    ),
    (
        # Version 5: a conversation's title and metadata (`ConversationStore.update`).
        'ALTER TABLE drc_records ADD COLUMN title TEXT',
        'ALTER TABLE drc_records ADD COLUMN metadata TEXT',
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
    (
        'CREATE TABLE {runs} ('
        ' run_id TEXT COLLATE "C" PRIMARY KEY,'
        ' conversation_id TEXT COLLATE "C" NOT NULL,'
        ' scope TEXT COLLATE "C",'
        ' started_at TEXT COLLATE "C" NOT NULL,'
        ' metadata TEXT NOT NULL,'
        ' head TEXT COLLATE "C",'
        ' skip INTEGER NOT NULL,'
        ' token TEXT COLLATE "C" NOT NULL'
        ')',
        'CREATE INDEX drc_runs_by_conversation ON {runs} (conversation_id)',
        'CREATE TABLE {index_conversations} ('
        ' conversation_id TEXT COLLATE "C" PRIMARY KEY,'
        ' revision TEXT COLLATE "C" NOT NULL,'
        ' head TEXT COLLATE "C",'
        ' depth INTEGER NOT NULL,'
        ' tips TEXT NOT NULL,'
        ' timed INTEGER NOT NULL'
        ')',
        'CREATE TABLE {pending} ('
        ' conversation_id TEXT COLLATE "C" NOT NULL,'
        ' run_id TEXT COLLATE "C" NOT NULL,'
        ' upto INTEGER NOT NULL,'
        ' PRIMARY KEY (conversation_id, run_id)'
        ')',
        'CREATE TABLE {index_scopes} ('
        ' scope_key BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,'
        ' conversation_id TEXT COLLATE "C" UNIQUE,'
        ' generation TEXT NOT NULL,'
        ' docs BIGINT NOT NULL,'
        ' length BIGINT NOT NULL'
        ')',
        'CREATE TABLE {index_runs} ('
        ' run_key BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,'
        ' run_id TEXT COLLATE "C" NOT NULL UNIQUE,'
        ' scope_key BIGINT NOT NULL,'
        ' started_at TEXT COLLATE "C" NOT NULL,'
        ' seen INTEGER NOT NULL,'
        ' first INTEGER NOT NULL,'
        ' lengths BYTEA NOT NULL,'
        ' seqs BYTEA NOT NULL,'
        ' roles BYTEA NOT NULL,'
        ' times BYTEA NOT NULL,'
        ' state BYTEA NOT NULL'
        ')',
        'CREATE INDEX drc_index_runs_by_scope ON {index_runs} (scope_key, started_at, run_id)',
        'CREATE TABLE {index_postings} ('
        ' scope_key BIGINT NOT NULL,'
        ' term TEXT COLLATE "C" NOT NULL,'
        ' chunk INTEGER NOT NULL,'
        ' postings BYTEA NOT NULL,'
        ' PRIMARY KEY (scope_key, term, chunk)'
        ')',
        'ALTER TABLE {index_postings} ALTER COLUMN postings SET STORAGE EXTERNAL',
        'CREATE TABLE {index_hashes} ('
        ' scope_key BIGINT NOT NULL,'
        ' hash BYTEA NOT NULL,'
        ' run_key BIGINT NOT NULL,'
        ' PRIMARY KEY (scope_key, hash)'
        ')',
        "INSERT INTO {meta} (key, value) VALUES ('index_generation', md5(random()::text || clock_timestamp()::text))"
        ' ON CONFLICT (key) DO NOTHING',
    ),
    (
        # Version 3: see the SQLite list.
        'DELETE FROM {index_postings}',
        'DELETE FROM {index_hashes}',
        'DELETE FROM {index_runs}',
        'DELETE FROM {index_scopes}',
        'DELETE FROM {pending}',
        'DELETE FROM {runs}',
        'DELETE FROM {index_conversations}',
        "UPDATE {meta} SET value = md5(random()::text || clock_timestamp()::text) WHERE key = 'index_generation'",
    ),
    (
        # Version 4: rare words' open tails in shared group rows (see the step store's version 12).
        'CREATE TABLE {index_groups} ('
        ' scope_key BIGINT NOT NULL,'
        ' bucket INTEGER NOT NULL,'
        ' terms BYTEA NOT NULL,'
        ' PRIMARY KEY (scope_key, bucket)'
        ') WITH (fillfactor = 70)',
        'ALTER TABLE {index_groups} ALTER COLUMN terms SET STORAGE EXTERNAL',
        'ALTER TABLE {index_scopes} ADD COLUMN group_bits SMALLINT NOT NULL DEFAULT 0',
    ),
    (
        # Version 5: see the SQLite list (`title` compares by code point, as Python does).
        'ALTER TABLE {records} ADD COLUMN title TEXT COLLATE "C"',
        'ALTER TABLE {records} ADD COLUMN metadata TEXT',
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
