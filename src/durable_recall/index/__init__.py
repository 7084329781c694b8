"""Index layer: the persistent search index kept beside the snapshots, written once for every store.

* `_chunks`, `_layout`: how postings and per-run arrays are packed into bytes;
* `_storage`: the port a store implements (`IndexStorage`: reads, and commits of catch-ups);
* `_apply`, `_inline`: how a commit is applied, once for every store, over the store's
  primitive writes (`IndexWriter`, `apply_commits`, `run_inline`);
* `_reader`: what catch-up reads from a store (`SnapshotReader`);
* `_catch_up`: folding new snapshots and turning what changed into commits (`Indexer`,
  `update_index`);
* `_bm25`, `_scoring`: BM25 top-k from postings; `_columns`, `_array_scoring`: the same for common terms, with numpy;
* `_neighbours`: neighbour weighting, a message's score with a share of the scores beside it;
* `_vectors`: message vectors for hybrid ranking (`VectorStorage`, `VectorRow`).
"""

from __future__ import annotations

from ._apply import FullTail, IndexWriter, StoredRun, TermChunk, apply_commits
from ._bm25 import DEFAULT_NEIGHBOURS, MAX_NEIGHBOURS, Bm25Params, idf, score_term
from ._catch_up import Indexer, Progress, Unreadable, record_text_terms, update_index
from ._chunks import OPEN, SEAL_BYTES, appended_postings, decode_chunk, merged, seal_tail, without_run
from ._columns import Columns, common_term, term_postings
from ._feed import Folded, RecordFeed, RecordView, SnapshotFeed
from ._inline import run_inline
from ._layout import ROLE_NAMES, array_length, decode_floats, decode_ints
from ._neighbours import Record, smoothed, smoothed_within
from ._reader import SnapshotReader
from ._scoring import Match, Postings, run_matches, scope_matches, term_order, top_scores
from ._storage import (
    IndexedRunRow,
    IndexStorage,
    Posting,
    PostingsRow,
    RunCommit,
    ScopeSpans,
    ScopeStatus,
    ScopeView,
    ScopeViews,
    SpansWanted,
    StaleIndexError,
)
from ._vectors import HASH_BYTES, MemoryVectors, VectorRow, VectorStorage, pack_floats, unpack_floats

__all__ = (
    'DEFAULT_NEIGHBOURS',
    'HASH_BYTES',
    'MAX_NEIGHBOURS',
    'OPEN',
    'ROLE_NAMES',
    'array_length',
    'SEAL_BYTES',
    'Bm25Params',
    'Columns',
    'IndexStorage',
    'IndexWriter',
    'IndexedRunRow',
    'Folded',
    'FullTail',
    'Indexer',
    'Match',
    'MemoryVectors',
    'Posting',
    'Postings',
    'PostingsRow',
    'Progress',
    'Record',
    'RecordFeed',
    'RecordView',
    'RunCommit',
    'ScopeSpans',
    'ScopeStatus',
    'ScopeView',
    'ScopeViews',
    'SpansWanted',
    'SnapshotFeed',
    'SnapshotReader',
    'StaleIndexError',
    'StoredRun',
    'TermChunk',
    'Unreadable',
    'VectorRow',
    'VectorStorage',
    'appended_postings',
    'common_term',
    'apply_commits',
    'decode_chunk',
    'decode_floats',
    'decode_ints',
    'idf',
    'merged',
    'pack_floats',
    'record_text_terms',
    'run_inline',
    'run_matches',
    'scope_matches',
    'score_term',
    'seal_tail',
    'smoothed',
    'smoothed_within',
    'term_order',
    'term_postings',
    'top_scores',
    'unpack_floats',
    'update_index',
    'without_run',
)
