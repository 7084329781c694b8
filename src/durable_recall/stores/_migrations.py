"""The SQL stores' schema, as an ordered list of migrations per dialect.

Entry `n` of a list moves a database from schema version `n` to `n + 1`; a store applies the
entries past the version recorded in `dr_meta` when it opens a database, inside one write
transaction, so concurrent workers never apply one twice. Table names are compatibility data:
a released migration is never edited, only followed by a new one.

Postgres statements name tables through `{meta}`, `{runs}`, `{messages}`, `{snapshots}`,
`{pending}` and `{index_*}` placeholders, which the store fills with (optionally schema-qualified)
identifiers. Id columns use the "C" collation so that Postgres sorts them by code point, as Python
and SQLite do.

Version 2 adds the persistent search index (see `durable_recall.index._storage`): `dr_pending`
marks runs with snapshots the index has not read (backfilled with every run that has snapshots,
so an upgraded database gets indexed), and the `dr_index_*` tables hold what catch-up wrote.

Version 3 changes how the message log holds bodies (see `durable_recall.stores._rows`): a new body
is stored compressed when that is smaller (`durable_recall._codec.encode_body`), and an entry a
run inherits from a run of its own conversation is a reference `(ref_run_id, ref_seq)` to the row
that holds the body, with no body of its own. Rows written before stay as they are (text bodies)
and read back unchanged.

* SQLite rebuilds `dr_messages` as a rowid table with a unique `(run_id, seq)` index: a WITHOUT
  ROWID table keeps at most about a quarter of a page of a row in the tree and spills the rest to
  overflow pages, which for kilobyte bodies wasted more than the bodies took. `body` holds TEXT
  (JSON) or a BLOB (compressed); SQLite keeps each value's type, which tells them apart.
* Postgres adds `data BYTEA` for compressed bodies (stored as is, not recompressed by TOAST),
  makes `body` (JSON text) nullable, and adds the reference columns.

Version 4 replaces `dr_index_terms` (a row per term and run) with `dr_index_postings` (a term's
postings in a scope in a few chunks: an open tail commits append to, and sealed, compressed
chunks; see `durable_recall.index._chunks`). The index is derived data: the migration empties the
index tables and marks every run with snapshots pending, so the next searches (or
`update_index`) rebuild it.

Version 5 moves inherited entries out of `dr_messages` into `dr_message_refs`, a row per *range*
(see `durable_recall.stores._log_refs`): entries `seq .. seq + count - 1` of `run_id` are entries
`ref_seq ..` of `ref_run_id`. A chat app's runs each inherit a window of recent messages, which a
row per message stored over and over (four reference rows for every body). The existing reference
rows become ranges (consecutive numbers whose `ref_seq` is consecutive too, for one `ref_run_id`:
a gaps-and-islands grouping with `ROW_NUMBER()`); then they and the `ref_run_id` and `ref_seq`
columns leave `dr_messages`, where every row now holds a body:

* SQLite rebuilds `dr_messages` (as version 3 did) rather than `ALTER TABLE ... DROP COLUMN`, which
  needs SQLite 3.35 and is missing from the system SQLite of distributions still in use (Debian 11,
  Ubuntu 20.04). The rebuild copies each body once and packs the table, leaving the pages the
  reference rows took free for reuse.
* Postgres deletes the reference rows and drops the columns (a catalog change, no rewrite).

Version 5 also makes `dr_index_runs.state` binary: the index writes a compact binary encoding of
its fold state. Postgres converts the column to `BYTEA` (old JSON text as its UTF-8 bytes); SQLite
keeps the declared type, since a TEXT-affinity column stores a bound BLOB as given, and the store
reads an old TEXT value back as its UTF-8 bytes (`durable_recall.stores._run_rows.indexed_run`).
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

_REF_RANGES: LiteralString = (
    'INSERT INTO {message_refs} (run_id, seq, count, ref_run_id, ref_seq)'
    ' SELECT run_id, MIN(seq), COUNT(*), ref_run_id, MIN(ref_seq) FROM ('
    ' SELECT run_id, seq, ref_run_id, ref_seq, seq - ref_seq AS shift,'
    ' seq - ROW_NUMBER() OVER (PARTITION BY run_id, ref_run_id, seq - ref_seq ORDER BY seq) AS island'
    ' FROM {messages} WHERE ref_run_id IS NOT NULL'
    ') AS refs GROUP BY run_id, ref_run_id, shift, island'
)
"""Version 5: version 3's reference rows as ranges, in both dialects.

Rows of one run naming one run at one shift (`seq - ref_seq`) whose numbers are consecutive share
an island (`seq` minus its rank): each island is a range.
"""

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
    (
        'CREATE TABLE dr_pending ('
        ' conversation_id TEXT NOT NULL,'
        ' run_id TEXT NOT NULL,'
        ' upto INTEGER NOT NULL,'
        ' PRIMARY KEY (conversation_id, run_id)'
        ') WITHOUT ROWID',
        'INSERT INTO dr_pending (conversation_id, run_id, upto)'
        " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx)"
        ' FROM dr_runs AS r JOIN dr_snapshots AS s ON s.run_id = r.run_id'
        ' GROUP BY r.run_id, r.conversation_id',
        'CREATE TABLE dr_index_scopes ('
        ' scope_key INTEGER PRIMARY KEY,'
        ' conversation_id TEXT UNIQUE,'
        ' generation TEXT NOT NULL,'
        ' docs INTEGER NOT NULL,'
        ' length INTEGER NOT NULL'
        ')',
        'CREATE TABLE dr_index_runs ('
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
        ' state TEXT NOT NULL'
        ')',
        'CREATE INDEX dr_index_runs_by_scope ON dr_index_runs (scope_key, started_at, run_id)',
        'CREATE TABLE dr_index_terms ('
        ' term TEXT NOT NULL,'
        ' scope_key INTEGER NOT NULL,'
        ' run_key INTEGER NOT NULL,'
        ' postings BLOB NOT NULL,'
        ' PRIMARY KEY (scope_key, term, run_key)'
        ') WITHOUT ROWID',
        'CREATE TABLE dr_index_hashes ('
        ' scope_key INTEGER NOT NULL,'
        ' hash BLOB NOT NULL,'
        ' run_key INTEGER NOT NULL,'
        ' PRIMARY KEY (scope_key, hash)'
        ') WITHOUT ROWID',
        "INSERT OR IGNORE INTO dr_meta (key, value) VALUES ('index_generation', lower(hex(randomblob(16))))",
    ),
    (
        'CREATE TABLE dr_messages_v3 ('
        ' run_id TEXT NOT NULL,'
        ' seq INTEGER NOT NULL,'
        ' body BLOB,'
        ' ref_run_id TEXT,'
        ' ref_seq INTEGER'
        ')',
        'INSERT INTO dr_messages_v3 (run_id, seq, body) SELECT run_id, seq, body FROM dr_messages ORDER BY run_id, seq',
        'DROP TABLE dr_messages',
        'ALTER TABLE dr_messages_v3 RENAME TO dr_messages',
        'CREATE UNIQUE INDEX dr_messages_by_seq ON dr_messages (run_id, seq)',
    ),
    (
        'DROP TABLE dr_index_terms',
        'CREATE TABLE dr_index_postings ('
        ' scope_key INTEGER NOT NULL,'
        ' term TEXT NOT NULL,'
        ' chunk INTEGER NOT NULL,'
        ' postings BLOB NOT NULL,'
        ' PRIMARY KEY (scope_key, term, chunk)'
        ') WITHOUT ROWID',
        'DELETE FROM dr_index_hashes',
        'DELETE FROM dr_index_runs',
        'DELETE FROM dr_index_scopes',
        'DELETE FROM dr_pending',
        'INSERT INTO dr_pending (conversation_id, run_id, upto)'
        " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx)"
        ' FROM dr_runs AS r JOIN dr_snapshots AS s ON s.run_id = r.run_id'
        ' GROUP BY r.run_id, r.conversation_id',
        "UPDATE dr_meta SET value = lower(hex(randomblob(16))) WHERE key = 'index_generation'",
    ),
    (
        'CREATE TABLE dr_message_refs ('
        ' run_id TEXT NOT NULL,'
        ' seq INTEGER NOT NULL,'
        ' count INTEGER NOT NULL,'
        ' ref_run_id TEXT NOT NULL,'
        ' ref_seq INTEGER NOT NULL,'
        ' PRIMARY KEY (run_id, seq)'
        ') WITHOUT ROWID',
        _REF_RANGES.format(messages='dr_messages', message_refs='dr_message_refs'),
        'CREATE TABLE dr_messages_v5 (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL)',
        'INSERT INTO dr_messages_v5 (run_id, seq, body) SELECT run_id, seq, body FROM dr_messages'
        ' WHERE ref_run_id IS NULL AND body IS NOT NULL ORDER BY run_id, seq',
        'DROP TABLE dr_messages',
        'ALTER TABLE dr_messages_v5 RENAME TO dr_messages',
        'CREATE UNIQUE INDEX dr_messages_by_seq ON dr_messages (run_id, seq)',
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
    (
        'CREATE TABLE {pending} ('
        ' conversation_id TEXT COLLATE "C" NOT NULL,'
        ' run_id TEXT COLLATE "C" NOT NULL,'
        ' upto INTEGER NOT NULL,'
        ' PRIMARY KEY (conversation_id, run_id)'
        ')',
        'INSERT INTO {pending} (conversation_id, run_id, upto)'
        " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx)"
        ' FROM {runs} AS r JOIN {snapshots} AS s ON s.run_id = r.run_id'
        ' GROUP BY r.run_id, r.conversation_id',
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
        ' state TEXT NOT NULL'
        ')',
        'CREATE INDEX dr_index_runs_by_scope ON {index_runs} (scope_key, started_at, run_id)',
        'CREATE TABLE {index_terms} ('
        ' term TEXT COLLATE "C" NOT NULL,'
        ' scope_key BIGINT NOT NULL,'
        ' run_key BIGINT NOT NULL,'
        ' postings BYTEA NOT NULL,'
        ' PRIMARY KEY (scope_key, term, run_key)'
        ')',
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
        'ALTER TABLE {messages}'
        ' ALTER COLUMN body DROP NOT NULL,'
        ' ADD COLUMN data BYTEA,'
        ' ADD COLUMN ref_run_id TEXT COLLATE "C",'
        ' ADD COLUMN ref_seq INTEGER',
        'ALTER TABLE {messages} ALTER COLUMN data SET STORAGE EXTERNAL',
    ),
    (
        'DROP TABLE {index_terms}',
        'CREATE TABLE {index_postings} ('
        ' scope_key BIGINT NOT NULL,'
        ' term TEXT COLLATE "C" NOT NULL,'
        ' chunk INTEGER NOT NULL,'
        ' postings BYTEA NOT NULL,'
        ' PRIMARY KEY (scope_key, term, chunk)'
        ')',
        'ALTER TABLE {index_postings} ALTER COLUMN postings SET STORAGE EXTERNAL',
        'DELETE FROM {index_hashes}',
        'DELETE FROM {index_runs}',
        'DELETE FROM {index_scopes}',
        'DELETE FROM {pending}',
        'INSERT INTO {pending} (conversation_id, run_id, upto)'
        " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx)"
        ' FROM {runs} AS r JOIN {snapshots} AS s ON s.run_id = r.run_id'
        ' GROUP BY r.run_id, r.conversation_id',
        "UPDATE {meta} SET value = md5(random()::text || clock_timestamp()::text) WHERE key = 'index_generation'",
    ),
    (
        'CREATE TABLE {message_refs} ('
        ' run_id TEXT COLLATE "C" NOT NULL,'
        ' seq INTEGER NOT NULL,'
        ' count INTEGER NOT NULL,'
        ' ref_run_id TEXT COLLATE "C" NOT NULL,'
        ' ref_seq INTEGER NOT NULL,'
        ' PRIMARY KEY (run_id, seq)'
        ')',
        _REF_RANGES,
        'DELETE FROM {messages} WHERE ref_run_id IS NOT NULL',
        'ALTER TABLE {messages} DROP COLUMN ref_run_id, DROP COLUMN ref_seq',
        "ALTER TABLE {index_runs} ALTER COLUMN state TYPE BYTEA USING convert_to(state, 'UTF8')",
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
