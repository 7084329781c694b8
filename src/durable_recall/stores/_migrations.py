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

Version 6 rebuilds the index (`INDEX_VERSION` 3), as version 4 did: the index now packs each run's
per-position arrays narrow, byte-shuffled and deflated (`durable_recall.index._layout`), and its
fold state keeps no content hashes (`durable_recall.history.FoldState`), which on a chat app's
workload took a third of the store.

Version 7 rebuilds the index (`INDEX_VERSION` 4) for the analyzer (`durable_recall.text._analyzer`):
terms are now stemmed (Snowball English) and Latin accents folded, identifiers kept exact. It also
records the analyzer's name in `dr_meta` under `index_analyzer` (`ANALYZER_ROW`), so that which
analyzer built an index is data, not an assumption: a release with another analyzer ships a
migration that rebuilds the index and writes its own name, and a release older than the database
refuses it (`check_version`) instead of searching an index its analyzer did not build.

Version 8 rebuilds the index (`INDEX_VERSION` 5): the record now keeps each compaction summary a
run's snapshots carried once, as a message of its own with the role `summary` (a new role code,
appended), and the fold state remembers the summaries of the last snapshot.

Version 9 adds `dr_vectors`, the message vectors of hybrid ranking (`ConversationSearch(ranking=
'hybrid')`; see `durable_recall.index._vectors`): a row per run and embedding model, with each
searchable position's float32 vector and a hash of the text it was computed from. It starts empty:
the first hybrid search of a scope computes the vectors of what is already indexed (backfill), and
BM25-only deployments never write it. The index itself is unchanged.

Version 10 drops run-table indexes that cost more than they saved (on a chat app's workload, a run
a message exchange, the run table's three indexes took more than the table): `dr_runs_by_started`
served only `list_runs()` without a filter, which returns every run and now sorts them itself
(SQLite with a temporary B-tree, Postgres with a sort), and `dr_runs_by_parent` becomes a partial
index over the runs that have a parent, which every `parent_run_id = ?` lookup implies, instead of
an entry per run, nearly all `NULL`. `dr_runs_by_conversation` stays: a conversation's runs, in
order, are what search and deletion read. The index's `dr_index_runs_by_scope` keeps only the scope
key: a scope's indexed runs are read whole when a reader opens (`IndexStorage.scope_runs`), and
sorting them costs less than an index entry repeating each run's start time and id.

Version 11 rebuilds the index (`INDEX_VERSION` 6): a term's open tail of postings holds each
posting as four varints instead of three 32-bit ints (`durable_recall.index._chunks`). Most of a
store's postings rows are the open tails of rare words, so on a chat app's workload this took the
postings from 12 bytes a posting to about 5. On SQLite it also stores run and snapshot times
(`dr_runs.started_at`, `dr_snapshots.saved_at`) as integer microseconds since the epoch instead of
32 characters of ISO text, rebuilding both tables (a chat app writes a run and two snapshots per
exchange, so the text took more than the message it saved); a stored value that is not such a
text is kept (a number as text saying so), so that reading it still names it. Postgres already
stored them as `TIMESTAMPTZ`.

Version 12 (Postgres only; SQLite's entry is empty) adds `dr_index_groups`, where rare words' open
tails of postings live many to a row, and `dr_index_scopes.group_bits`, how many buckets (a power of
two) a scope's groups are spread over (`durable_recall.stores.postgres._groups`). Most postings rows
of a large store were a rare word's tail of one posting, and a Postgres row costs far more than
that (tuple header, key, B-tree entry). Nothing is rebuilt: the rows an older release wrote stay
valid (a term's own rows are looked up first), and new rare words go to groups; `durable-recall
check --rebuild-index` repacks an upgraded index.

Version 13 (SQLite only; Postgres's entry is empty) numbers the runs: `dr_runs` becomes a rowid
table whose `run_no` (`AUTOINCREMENT`, so a deleted run's number is never given to another) is
what the message log names its runs by, `dr_messages (run_no, seq, body)` and `dr_message_refs
(run_no, seq, count, ref_run_no, ref_seq)`, in place of the run's id as text: on a chat app's
workload, a run a message exchange, the ids in the log and its index took more than the bodies'
text. The upgrade rebuilds the three tables (rows in the order they had, runs numbered in start
order) and reads back exactly as before. A log row naming a run that has no run row cannot be
numbered: the upgrade then fails whole, naming such rows, and the file stays at version 12.
Snapshot rows keep the run's id, so that a run row lost to damage is still named by its snapshots.

Version 14 (both dialects) adds `dr_snapshots.checksum`: the first 16 hex digits of the MD5 of the
row's index, state, size, ranges and run id (`_snapshot_sum`), written with every row and verified
on every read, so that a row whose ranges were rewritten to another valid list (a reordered
history of the same size) is named as damage instead of read as a different snapshot. The upgrade
computes the checksum of every existing row (SQLite through a Python function the connection
registers, Postgres with `md5()`), rewriting the snapshot table once.

Version 15 (both dialects) adds `dr_conversation_keys`: a row per key of a conversation (random
`key_id`, `conversation_id`, `version`, the 32-byte `secret`, `created_at`), which the journal codecs
(`durable_recall.temporal.ConversationPayloadCodec`, `durable_recall.dbos.ConversationSerializer`)
encrypt a conversation's engine payloads with (`_keys`). Deleting a conversation deletes its rows in
the same transaction. It starts empty; nothing else changes.

The statements live in `_sqlite_migrations` and `_postgres_migrations`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._postgres_migrations import POSTGRES_META, POSTGRES_MIGRATIONS
from ._sqlite_migrations import SQLITE_META, SQLITE_MIGRATIONS

if TYPE_CHECKING:
    pass

__all__ = (
    'POSTGRES_META',
    'POSTGRES_MIGRATIONS',
    'SCHEMA_VERSION',
    'SQLITE_META',
    'SQLITE_MIGRATIONS',
    'check_version',
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
        from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(
            f'{where} holds durable-recall schema version {found}, but this release understands up to '
            f'version {SCHEMA_VERSION}: upgrade durable-recall on this host (a newer release has '
            'already migrated the database), or point the store at another database.'
        )
