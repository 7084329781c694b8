"""The index's storage seam: what a store keeps of the search index, and how it changes.

The index is derived data kept beside the snapshots, in the same database, so that a process
that starts cold answers from it instead of re-reading snapshots. It is written by catch-up
([`Indexer`][durable_recall.index.Indexer]): a store only marks which runs got snapshots since
they were indexed (`pending`), and applies each batch of catch-ups as one transaction, with the
algorithm in `_apply` over the store's primitive writes (`IndexWriter`).

Identifiers:

* a *scope key* is a small integer per conversation id (key 0 is every run without one); it
  keeps conversation ids out of the postings rows;
* a *run key* is a small integer per indexed run;
* a *document* is one position of one run's record.

Postings are kept per `(scope key, term)` in a few numbered chunks: an open tail that commits
append to, and sealed chunks (see [`_chunks`]); each posting names
its document (`run_key << 32 | position`), its term frequency and the document's length. Only a
run's own positions have postings (from `first` on): what it inherited is indexed under the run
that persisted it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

__all__ = (
    'IndexStorage',
    'IndexedRunRow',
    'Posting',
    'PostingsRow',
    'RunCommit',
    'ScopeSpans',
    'ScopeStatus',
    'ScopeView',
    'ScopeViews',
    'SpansWanted',
    'StaleIndexError',
)


Posting = tuple[int, int, int]
"""`(position, tf, document length)` of one run's document."""


@dataclass(frozen=True, kw_only=True)
class ScopeSpans:
    """A conversation's indexed runs in corpus order, as columns (`IndexStorage.scope_spans`).

    Columns rather than an object or a tuple per run: a chat app's conversation holds thousands of
    runs, and a cold search that built thousands of objects also paid for the garbage collector
    passes they set off (on a fresh process, a full collection of everything its imports left).

    Attributes:
        run_keys: Each run's key.
        firsts: Each run's `first` (positions inherited from an earlier run).
        lengths: Each run's packed lengths array, or only its head: enough for `array_length`.
    """

    run_keys: Sequence[int]
    firsts: Sequence[int]
    lengths: Sequence[bytes]


class StaleIndexError(Exception):
    """A run's catch-up lost a race: another process indexed the run first; read it again."""


@dataclass(frozen=True, kw_only=True)
class ScopeStatus:
    """Where a scope's index stands.

    Attributes:
        generation: Changes whenever any run in the scope is (re)indexed or deleted; equal
            generations mean a reader's cached statistics and postings are still exact.
        pending: Runs in the scope (run ids, oldest first) that hold snapshots the index has
            not read yet.
        docs: Searchable documents in the scope (positions at or after each run's `first`).
        length: Their total length in tokens.
    """

    generation: str
    pending: list[str]
    docs: int
    length: int


@dataclass(frozen=True, kw_only=True)
class IndexedRunRow:
    """One run as the index holds it.

    Attributes:
        run_key: The run's key in postings rows.
        run_id: The run id.
        scope_key: The run's conversation's key.
        seen: The last snapshot index catch-up has read (complete or not); -1 for none.
        first: Leading record positions inherited from an earlier run of the conversation.
        lengths: Token count per record position.
        seqs: The run's message-log number per record position (where its body is).
        roles: Role code per record position (see `_layout.ROLE_CODES`).
        times: Message time per record position, as POSIX seconds (the run's start for a message
            that carries no timestamp).
        state: The record builder's resumable state (`FoldState.to_bytes`; empty before the first fold).
        started_at: The run's start as sortable text (`RunCommit.started_at`): with the run id,
            the run's place in corpus order.
    """

    run_key: int
    run_id: str
    scope_key: int
    seen: int
    first: int
    lengths: bytes
    seqs: bytes
    roles: bytes
    times: bytes
    state: bytes
    started_at: str = ''


@dataclass(frozen=True, kw_only=True)
class PostingsRow:
    """One chunk of a term's postings in a scope (`chunk` 0 is the open tail; see `_chunks`)."""

    chunk: int
    postings: bytes


@dataclass(frozen=True, kw_only=True)
class RunCommit:
    """One run's catch-up, applied atomically by `IndexStorage.commit`.

    Attributes:
        run_id: The run.
        conversation_id: Its conversation (`None` for none).
        started_at: The run's start, as sortable text, for scope listing order.
        expected_seen: The `seen` the catch-up started from (-2 for a run not yet indexed); the
            commit raises `StaleIndexError` when the stored value differs.
        seen: The new `seen`.
        upto: The last snapshot index the catch-up read; the run's pending mark is cleared when
            nothing was saved after it.
        first: As in `IndexedRunRow`.
        lengths, seqs, roles, times: The run's whole per-position arrays, as in `IndexedRunRow`.
        state: The builder state to resume from.
        postings_add: Term -> `(position, tf, length)` postings of the run to add (positions
            the run has no posting of yet), positions increasing.
        postings_set: Term -> the run's whole new postings of that term (empty: it has none any
            more), for terms whose earlier positions changed; they replace all the run's postings
            of the term.
        hashes: Content hashes (raw bytes) of the record positions added, for the inheritance
            check of later runs.
        docs_delta: Change in the scope's searchable documents.
        length_delta: Change in the scope's total searchable length.
    """

    run_id: str
    conversation_id: str | None
    started_at: str
    expected_seen: int
    seen: int
    upto: int
    first: int
    lengths: bytes
    seqs: bytes
    roles: bytes
    times: bytes
    state: bytes
    postings_add: Mapping[str, Sequence[Posting]] = field(default_factory=dict[str, Sequence[Posting]])
    postings_set: Mapping[str, Sequence[Posting]] = field(default_factory=dict[str, Sequence[Posting]])
    hashes: Sequence[bytes] = ()
    docs_delta: int = 0
    length_delta: int = 0


SpansWanted = Literal['no', 'if-moved', 'yes']
"""Whether `ScopeViews.view` reads the conversation's spans too."""


@dataclass(frozen=True, kw_only=True)
class ScopeView:
    """A scope's status with the postings and spans a search needs, read in one statement (`ScopeViews.view`).

    Attributes:
        status: As `IndexStorage.status`.
        postings: As `IndexStorage.postings`, of the terms the view returned (see `ScopeViews.view`).
        moved: Whether the scope's generation differs from the one the caller said it knew.
        spans: The conversation's spans (`IndexStorage.scope_spans`), when they were read.
    """

    status: ScopeStatus
    postings: Mapping[str, list[PostingsRow]]
    moved: bool
    spans: ScopeSpans | None = None


@runtime_checkable
class ScopeViews(Protocol):
    """An index that reads a search's status, postings and spans in one round trip (optional, beside `IndexStorage`).

    A warm search of a networked store otherwise pays a round trip per read: the status, the
    postings, the status again (postings and statistics must be of one generation), the spans.
    One statement sees one snapshot, so the postings it returns are of the status it returns.
    """

    async def view(
        self,
        conversation_id: str | None,
        *,
        all_scopes: bool,
        terms: Sequence[str],
        known: str | None,
        known_terms: Sequence[str] = (),
        spans: SpansWanted = 'no',
    ) -> ScopeView:
        """The scope's status and postings, in one consistent read.

        Args:
            conversation_id: The conversation (ignored when `all_scopes`).
            all_scopes: The whole store.
            terms: Terms whose postings are always returned (those the caller does not hold).
            known: The generation the caller holds postings and spans of (`None`: none).
            known_terms: Terms whose postings the caller holds for `known`: returned only when
                the generation moved from it.
            spans: The conversation's spans too: `'yes'`, `'if-moved'` (when the generation moved
                from `known`), or `'no'` (always `'no'` for `all_scopes`).
        """
        ...


@runtime_checkable
class IndexStorage(Protocol):
    """A store's half of the persistent index (see the module docstring)."""

    async def status(self, conversation_id: str | None, *, all_scopes: bool) -> ScopeStatus:
        """The scope's generation, pending runs and statistics, read in one consistent view.

        Args:
            conversation_id: The conversation (ignored when `all_scopes`).
            all_scopes: The whole store: every conversation and every run without one.
        """
        ...

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, IndexedRunRow]:
        """The index rows of these runs (runs never indexed are left out)."""
        ...

    async def runs_by_key(self, run_keys: Sequence[int]) -> dict[int, IndexedRunRow]:
        """The index rows of these run keys (keys not found are left out)."""
        ...

    async def scope_runs(self, conversation_id: str | None, *, all_scopes: bool) -> list[IndexedRunRow]:
        """Every indexed run of the scope, oldest first; `state`, `seqs`, `roles`, `times` may be empty."""
        ...

    async def scope_spans(self, conversation_id: str | None) -> ScopeSpans:
        """Every indexed run of a conversation, oldest first (as `scope_runs`), as the span of its record.

        What a search's windows need of the conversation's record, and no more: a chat app's
        conversation holds thousands of runs of a few messages each, and reading them as
        `IndexedRunRow`s (ids, whole arrays, an object each) was most of a cold search.
        """
        ...

    async def postings(
        self, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[PostingsRow]]:
        """Each term's chunks in the scope, by scope then chunk number (terms without any are left out)."""
        ...

    async def inherited(self, conversation_id: str, hashes: Sequence[bytes], *, exclude_run_id: str) -> set[bytes]:
        """Which of `hashes` a run of the conversation other than `exclude_run_id` holds."""
        ...

    async def terms(self, conversation_id: str | None, *, all_scopes: bool) -> list[str]:
        """Every term that has postings in the scope, sorted.

        Searches never need it (they look terms up); a consistency check (`durable-recall check`)
        does, to find postings of terms that a fresh catch-up would not write at all.
        """
        ...

    async def rebuild(self) -> int:
        """Empty the index and mark every run that holds snapshots pending, in one transaction.

        What a schema migration that changes the index's format does, on demand: the next catch-up
        (a search, `update_index`) rebuilds the index from the snapshots, which are the truth. This
        is the repair for an index found damaged (`durable-recall check --rebuild-index`).

        Returns:
            How many runs were marked pending.
        """
        ...

    async def commit(self, change: RunCommit) -> None:
        """Apply one run's catch-up in one transaction.

        Raises:
            StaleIndexError: The run's stored `seen` is not `change.expected_seen`.
        """
        ...

    async def commit_many(self, changes: Sequence[RunCommit]) -> None:
        """Apply several runs' catch-ups (one per run), in order, in one transaction.

        Each term's new postings of all the runs are appended to its open tail in one write.
        A change for a run deleted meanwhile is skipped, as `commit` skips it. Every store does
        this the same way: one transaction of its own around
        [`apply_commits`][durable_recall.index.apply_commits] over its `IndexWriter`.

        Raises:
            StaleIndexError: A run's stored `seen` is not its change's `expected_seen`; nothing
                of the batch is applied.
        """
        ...
