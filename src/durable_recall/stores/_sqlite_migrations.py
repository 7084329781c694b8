"""SQLite's schema migrations (see `durable_recall.stores._migrations` for what each version does)."""

from __future__ import annotations

from typing import LiteralString

from ._ref_ranges import REF_RANGES

__all__ = ('ANALYZER_ROW', 'SQLITE_META', 'SQLITE_MIGRATIONS')

ANALYZER_ROW: LiteralString = (
    "INSERT INTO dr_meta (key, value) VALUES ('index_analyzer', 'durable-recall/1 snowball:english fold:latin')"
    ' ON CONFLICT (key) DO UPDATE SET value = excluded.value'
)
"""Records which analyzer built the index (`durable_recall.text.ANALYZER_NAME`; a test checks they agree).

A migration that rebuilds the index for a new analyzer writes the new name the same way."""

SQLITE_INDEX_RESET: tuple[LiteralString, ...] = (
    'DELETE FROM dr_index_postings',
    'DELETE FROM dr_index_hashes',
    'DELETE FROM dr_index_runs',
    'DELETE FROM dr_index_scopes',
    'DELETE FROM dr_pending',
    'INSERT INTO dr_pending (conversation_id, run_id, upto)'
    " SELECT COALESCE(r.conversation_id, ''), r.run_id, MAX(s.idx)"
    ' FROM dr_runs AS r JOIN dr_snapshots AS s ON s.run_id = r.run_id'
    ' GROUP BY r.run_id, r.conversation_id',
)
"""Empty the index and mark every run with snapshots pending, so the next catch-up rebuilds it.

What an index-format migration does (versions 6 and 7; version 4 did it as it replaced a table),
and what `durable-recall check --rebuild-index` does (`SqliteIndex.rebuild`)."""


def _micros(column: LiteralString) -> LiteralString:
    """SQL for the microseconds since the epoch of `column` as `format_timestamp` wrote it (schema 10's text).

    Any other value (damaged, or hand-edited) is kept, so that reading it still names it rather than
    losing the row or reading it as another time: text and blobs as they are, and a number (which
    the new integer column would take for a time) as text that says what it was.
    """
    return (
        f"COALESCE(CASE WHEN typeof({column}) = 'text' AND {column} GLOB"
        " '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]"
        ".[0-9][0-9][0-9][0-9][0-9][0-9]+00:00'"
        f" THEN CAST(strftime('%s', substr({column}, 1, 19)) AS INTEGER) * 1000000"
        f' + CAST(substr({column}, 21, 6) AS INTEGER) END,'
        f" CASE WHEN typeof({column}) IN ('integer', 'real') THEN 'a number: ' || {column} ELSE {column} END)"
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
        REF_RANGES.format(messages='dr_messages', message_refs='dr_message_refs'),
        'CREATE TABLE dr_messages_v5 (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL)',
        'INSERT INTO dr_messages_v5 (run_id, seq, body) SELECT run_id, seq, body FROM dr_messages'
        ' WHERE ref_run_id IS NULL AND body IS NOT NULL ORDER BY run_id, seq',
        'DROP TABLE dr_messages',
        'ALTER TABLE dr_messages_v5 RENAME TO dr_messages',
        'CREATE UNIQUE INDEX dr_messages_by_seq ON dr_messages (run_id, seq)',
    ),
    (
        # Version 6: the index packs its per-run arrays and fold state anew (`INDEX_VERSION` 3).
        *SQLITE_INDEX_RESET,
        "UPDATE dr_meta SET value = lower(hex(randomblob(16))) WHERE key = 'index_generation'",
    ),
    (
        # Version 7: the analyzer stems and folds accents (`INDEX_VERSION` 4): rebuild the index,
        # and record which analyzer builds it.
        *SQLITE_INDEX_RESET,
        "UPDATE dr_meta SET value = lower(hex(randomblob(16))) WHERE key = 'index_generation'",
        ANALYZER_ROW,
    ),
    (
        # Version 8: compaction summaries are recorded and indexed once, with the role `summary`
        # (`INDEX_VERSION` 5): rebuild the index.
        *SQLITE_INDEX_RESET,
        "UPDATE dr_meta SET value = lower(hex(randomblob(16))) WHERE key = 'index_generation'",
    ),
    (
        # Version 9: message vectors for hybrid ranking, one row per run and embedding model
        # (`durable_recall.index.VectorRow`); a rowid table, since a row's blobs can be kilobytes.
        # IF NOT EXISTS: a database a test set back to an older version keeps its table.
        'CREATE TABLE IF NOT EXISTS dr_vectors ('
        ' run_id TEXT NOT NULL,'
        ' model TEXT NOT NULL,'
        ' seen INTEGER NOT NULL,'
        ' dim INTEGER NOT NULL,'
        ' hashes BLOB NOT NULL,'
        ' vectors BLOB NOT NULL'
        ')',
        'CREATE UNIQUE INDEX IF NOT EXISTS dr_vectors_by_run ON dr_vectors (run_id, model)',
    ),
    (
        # Version 10: the run table keeps only the indexes a query uses with profit: listing every
        # run sorts what it returns anyway, and a parent's children are the runs with a parent.
        'DROP INDEX IF EXISTS dr_runs_by_started',
        'DROP INDEX IF EXISTS dr_runs_by_parent',
        'CREATE INDEX dr_runs_by_parent ON dr_runs (parent_run_id, started_at, run_id) WHERE parent_run_id IS NOT NULL',
        # A scope's indexed runs are read whole, then sorted: the scope key alone finds them.
        'DROP INDEX IF EXISTS dr_index_runs_by_scope',
        'CREATE INDEX dr_index_runs_by_scope ON dr_index_runs (scope_key)',
    ),
    (
        # Version 11: open tails of postings hold varint records (`INDEX_VERSION` 6): rebuild the index.
        *SQLITE_INDEX_RESET,
        "UPDATE dr_meta SET value = lower(hex(randomblob(16))) WHERE key = 'index_generation'",
        # Run and snapshot times as integer microseconds since the epoch (`durable_recall.base.to_micros`).
        'CREATE TABLE dr_runs_v11 ('
        ' run_id TEXT PRIMARY KEY NOT NULL,'
        ' conversation_id TEXT,'
        ' parent_run_id TEXT,'
        ' agent_name TEXT,'
        ' metadata TEXT NOT NULL,'
        ' started_at INTEGER NOT NULL,'
        ' token TEXT NOT NULL'
        ') WITHOUT ROWID',
        'INSERT INTO dr_runs_v11 (run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token)'
        f' SELECT run_id, conversation_id, parent_run_id, agent_name, metadata, {_micros("started_at")}, token'
        ' FROM dr_runs',
        'DROP TABLE dr_runs',
        'ALTER TABLE dr_runs_v11 RENAME TO dr_runs',
        'CREATE INDEX dr_runs_by_conversation ON dr_runs (conversation_id, started_at, run_id)',
        'CREATE INDEX dr_runs_by_parent ON dr_runs (parent_run_id, started_at, run_id) WHERE parent_run_id IS NOT NULL',
        'CREATE TABLE dr_snapshots_v11 ('
        ' run_id TEXT NOT NULL,'
        ' idx INTEGER NOT NULL,'
        ' step_index INTEGER NOT NULL,'
        ' state TEXT NOT NULL,'
        ' saved_at INTEGER NOT NULL,'
        ' ranges TEXT NOT NULL,'
        ' size INTEGER NOT NULL,'
        ' PRIMARY KEY (run_id, idx)'
        ') WITHOUT ROWID',
        'INSERT INTO dr_snapshots_v11 (run_id, idx, step_index, state, saved_at, ranges, size)'
        f' SELECT run_id, idx, step_index, state, {_micros("saved_at")}, ranges, size FROM dr_snapshots',
        'DROP TABLE dr_snapshots',
        'ALTER TABLE dr_snapshots_v11 RENAME TO dr_snapshots',
    ),
    (
        # Version 12 changes only Postgres (rare words' grouped tails): SQLite keeps a row per tail.
    ),
    (
        # Version 13: the message log names its run by an integer, the run's `run_no`, instead of
        # its id as text (`durable_recall.stores._migrations`). Runs are numbered in start order.
        'CREATE TABLE dr_runs_v13 ('
        ' run_no INTEGER PRIMARY KEY AUTOINCREMENT,'
        ' run_id TEXT NOT NULL UNIQUE,'
        ' conversation_id TEXT,'
        ' parent_run_id TEXT,'
        ' agent_name TEXT,'
        ' metadata TEXT NOT NULL,'
        ' started_at INTEGER NOT NULL,'
        ' token TEXT NOT NULL'
        ')',
        'INSERT INTO dr_runs_v13 (run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token)'
        ' SELECT run_id, conversation_id, parent_run_id, agent_name, metadata, started_at, token FROM dr_runs'
        ' ORDER BY started_at, run_id',
        'DROP TABLE dr_runs',
        'ALTER TABLE dr_runs_v13 RENAME TO dr_runs',
        'CREATE INDEX dr_runs_by_conversation ON dr_runs (conversation_id, started_at, run_id)',
        'CREATE INDEX dr_runs_by_parent ON dr_runs (parent_run_id, started_at, run_id) WHERE parent_run_id IS NOT NULL',
        # A log row whose run has no run row (a hand edit, a damaged id) has no number: its NOT NULL
        # fails the upgrade, which rolls back whole and names the rows (`SqliteConnection`).
        'CREATE TABLE dr_messages_v13 (run_no INTEGER NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL)',
        'INSERT INTO dr_messages_v13 (run_no, seq, body)'
        ' SELECT (SELECT r.run_no FROM dr_runs AS r WHERE r.run_id = m.run_id), m.seq, m.body'
        ' FROM dr_messages AS m ORDER BY m.rowid',
        'DROP TABLE dr_messages',
        'ALTER TABLE dr_messages_v13 RENAME TO dr_messages',
        'CREATE UNIQUE INDEX dr_messages_by_seq ON dr_messages (run_no, seq)',
        'CREATE TABLE dr_message_refs_v13 ('
        ' run_no INTEGER NOT NULL,'
        ' seq INTEGER NOT NULL,'
        ' count INTEGER NOT NULL,'
        ' ref_run_no INTEGER NOT NULL,'
        ' ref_seq INTEGER NOT NULL,'
        ' PRIMARY KEY (run_no, seq)'
        ') WITHOUT ROWID',
        'INSERT INTO dr_message_refs_v13 (run_no, seq, count, ref_run_no, ref_seq)'
        ' SELECT (SELECT r.run_no FROM dr_runs AS r WHERE r.run_id = f.run_id), f.seq, f.count,'
        ' (SELECT r.run_no FROM dr_runs AS r WHERE r.run_id = f.ref_run_id), f.ref_seq FROM dr_message_refs AS f',
        'DROP TABLE dr_message_refs',
        'ALTER TABLE dr_message_refs_v13 RENAME TO dr_message_refs',
    ),
    (
        # Version 14: each snapshot row carries a checksum of its key and contents (`_snapshot_sum`),
        # verified on every read; an upgraded store's rows get theirs here (`dr_snapshot_checksum` is
        # the Python function, registered on every connection by `SqliteConnection`).
        # The table is rebuilt (not altered), so that a file a test set back to an older version,
        # whose table has the column already, upgrades the same way.
        'CREATE TABLE dr_snapshots_v14 ('
        ' run_id TEXT NOT NULL,'
        ' idx INTEGER NOT NULL,'
        ' step_index INTEGER NOT NULL,'
        ' state TEXT NOT NULL,'
        ' saved_at INTEGER NOT NULL,'
        ' ranges TEXT NOT NULL,'
        ' size INTEGER NOT NULL,'
        ' checksum TEXT,'
        ' PRIMARY KEY (run_id, idx)'
        ') WITHOUT ROWID',
        'INSERT INTO dr_snapshots_v14 (run_id, idx, step_index, state, saved_at, ranges, size, checksum)'
        ' SELECT run_id, idx, step_index, state, saved_at, ranges, size,'
        ' dr_snapshot_checksum(run_id, idx, state, ranges, size) FROM dr_snapshots',
        'DROP TABLE dr_snapshots',
        'ALTER TABLE dr_snapshots_v14 RENAME TO dr_snapshots',
    ),
    (
        # Version 15: conversation keys, which the journal codecs encrypt engine payloads with
        # (`stores._keys`); deleting a conversation deletes its keys.
        'CREATE TABLE IF NOT EXISTS dr_conversation_keys ('
        ' key_id TEXT PRIMARY KEY NOT NULL,'
        ' conversation_id TEXT NOT NULL,'
        ' version INTEGER NOT NULL,'
        ' secret BLOB NOT NULL,'
        ' created_at INTEGER NOT NULL,'
        ' UNIQUE (conversation_id, version)'
        ') WITHOUT ROWID',
    ),
)
