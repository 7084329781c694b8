"""Ranking from the store's persistent index: statistics and postings, never snapshots.

A search first asks the store where the scope's index stands (one small read); if runs saved
snapshots since they were indexed, it catches them up (reading only those snapshots). It then
reads the postings of the query's terms and scores them with the same BM25 arithmetic as the
in-memory corpus, over the same documents, so both rank alike. Only the messages the answer shows
are read back from the store.

What a process keeps between searches is tagged with the scope's generation: while no run of the
scope is indexed again, a warm search reads nothing but the generation and the postings of terms
it has not seen yet.
"""

from __future__ import annotations

import heapq
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import overload

from pydantic_ai.messages import ModelMessage

from .._errors import CorruptSnapshotError
from .._records import RunRecord
from ..history import strip_artifacts
from ..index._indexer import Indexer, record_text_terms
from ..index._layout import ROLE_NAMES, decode_floats, decode_ints, decode_postings
from ..index._storage import IndexedRunRow
from ..stores._protocol import StepStore
from ._bm25 import Bm25Params, idf
from ._corpus import Filters, Hit, IndexedRun, Section
from ._scoring import IndexedRunView, add_scores, run_matches, scope_matches

__all__ = ('IndexedCorpus', 'Ranked')

_ALL = object()


@dataclass
class _Scope:
    generation: str
    runs: dict[int, IndexedRunView]
    by_id: dict[str, IndexedRunView]
    docs: int
    length: int
    terms: OrderedDict[str, list[tuple[IndexedRunView, Sequence[int], Sequence[int]]]] = field(
        default_factory=OrderedDict[str, list[tuple[IndexedRunView, Sequence[int], Sequence[int]]]]
    )


@dataclass(frozen=True, kw_only=True)
class Ranked:
    """The scored matches of one search, before windows and excerpts.

    Attributes:
        total: Documents searched.
        hits: Hits best first (or in the requested order), each with its section and the
            messages its window shows loaded.
        rarity: Each query term's idf.
        unreadable: Runs whose snapshots could not be read, as `(run id, snapshot, reason)`.
        known_run: For a `run_id` search, whether the scope holds the run.
    """

    total: int
    hits: list[Hit]
    rarity: Mapping[str, float]
    unreadable: list[CorruptSnapshotError]
    known_run: bool = True


class IndexedCorpus:
    """Searches a store through its persistent index, keeping decoded postings per scope generation."""

    def __init__(
        self,
        store: StepStore,
        *,
        max_cached_terms: int = 4096,
        max_cached_scopes: int = 64,
        max_cached_messages: int = 2048,
    ) -> None:
        self._store = store
        self._indexer = Indexer(store)
        self._storage = self._indexer.storage
        self._scopes: OrderedDict[object, _Scope] = OrderedDict()
        self._max_terms = max_cached_terms
        self._max_scopes = max_cached_scopes
        self._shown: OrderedDict[tuple[str, str, int], ModelMessage] = OrderedDict()
        self._max_shown = max_cached_messages

    async def refresh(self, conversation_id: str | None, *, all_scopes: bool) -> list[CorruptSnapshotError]:
        """Catch the scope's index up with its snapshots; returns the runs that could not be read."""
        status = await self._storage.status(conversation_id, all_scopes=all_scopes)
        problems: list[CorruptSnapshotError] = []
        if status.pending:
            problems = await self._indexer.catch_up(status.pending)
            status = await self._storage.status(conversation_id, all_scopes=all_scopes)
        key = _ALL if all_scopes else conversation_id
        cached = self._scopes.get(key)
        if cached is None or cached.generation != status.generation:
            rows = await self._storage.scope_runs(conversation_id, all_scopes=all_scopes)
            self._scopes[key] = _load_scope(status.generation, rows)
        self._scopes.move_to_end(key)
        while len(self._scopes) > self._max_scopes:
            self._scopes.popitem(last=False)
        return problems

    async def rank(
        self,
        terms: Sequence[str],
        params: Bm25Params,
        filters: Filters,
        *,
        conversation_id: str | None,
        all_scopes: bool,
        run_id: str | None,
        limit: int | None = None,
    ) -> Ranked:
        """Exact BM25 over the scope's documents (or one run's whole record, for `run_id`).

        Call `refresh` first: this ranks what the index held then. With `limit`, only the best
        `limit` hits are returned (ties broken by corpus order, as in the full ranking).
        """
        scope = self._scopes[_ALL if all_scopes else conversation_id]
        only: IndexedRunView | None = None
        head: list[Counter[str]] = []
        if run_id is not None:
            only = scope.by_id.get(run_id)
            if only is None or not only.lengths:
                return Ranked(total=0, hits=[], rarity={}, unreadable=[], known_run=only is not None)
            head = await self._head(only)
            total = len(only.lengths)
            length = sum(counts.total() for counts in head) + sum(only.lengths[only.first :])
        else:
            total, length = scope.docs, scope.length
        if total == 0:
            return Ranked(total=0, hits=[], rarity={}, unreadable=[])
        postings = await self._postings(scope, terms, conversation_id, all_scopes=all_scopes)
        avgdl = length / total
        rarity: dict[str, float] = {}
        scores: dict[tuple[IndexedRunView, int], float] = {}
        for term in dict.fromkeys(terms):
            found = postings.get(term, [])
            matches = run_matches(only, head, term, found, total) if only is not None else scope_matches(found)
            term_idf = idf(total, sum(end - start for _, _, _, _, start, end in matches))
            rarity[term] = term_idf
            add_scores(scores, matches, term_idf, avgdl, params)
        scored = [((run, position), score) for (run, position), score in scores.items()]
        if filters.roles is not None or filters.since is not None or filters.until is not None:
            scored = await self._filtered(scored, filters)
        ranking = [(-score, run.order, position, run) for (run, position), score in scored]
        # Only the best `limit` need sorting: the rest can never reach the answer.
        best = heapq.nsmallest(limit, ranking) if limit is not None and limit < len(ranking) else sorted(ranking)
        hits = [Hit(_section(run, only is not None), position, -score) for score, _, position, run in best]
        return Ranked(total=total, hits=hits, rarity=rarity, unreadable=[])

    async def times(self, hits: Sequence[Hit]) -> dict[tuple[str, int], float]:
        """Each hit's message time (POSIX seconds), for newest/oldest order."""
        rows = await self._storage.load_runs(sorted({hit.section.indexed.run.run_id for hit in hits}))
        times = {run_id: decode_floats(row.times) for run_id, row in rows.items()}
        out: dict[tuple[str, int], float] = {}
        for hit in hits:
            run_id = hit.section.indexed.run.run_id
            out[run_id, hit.position] = times[run_id][hit.position] if run_id in times else 0.0
        return out

    async def load_windows(self, hits: Sequence[Hit], context_lines: int) -> list[Hit]:
        """The hits with their run records and the messages their windows show, read from the store."""
        wanted: dict[str, set[int]] = {}
        for hit in hits:
            section = hit.section
            size = len(section.indexed.messages)
            start = max(section.first, hit.position - context_lines)
            end = min(size, hit.position + context_lines + 1)
            wanted.setdefault(section.indexed.run.run_id, set()).update(range(start, end))
        rows = await self._storage.load_runs(sorted(wanted))
        loaded: dict[str, IndexedRun] = {}
        for run_id, positions in wanted.items():
            record = await self._store.get_run(run_id)
            row = rows.get(run_id)
            if record is None or row is None:
                continue
            seqs = decode_ints(row.seqs)
            messages = await self._messages(record, {p: seqs[p] for p in positions})
            loaded[run_id] = IndexedRun(record, row.seen, _Window(len(seqs), messages), (), [], {})
        out: list[Hit] = []
        for hit in hits:
            indexed = loaded.get(hit.section.indexed.run.run_id)
            if indexed is None:
                continue
            out.append(Hit(Section(indexed, hit.section.first, hit.section.order), hit.position, hit.score))
        return out

    async def _head(self, run: IndexedRunView) -> list[Counter[str]]:
        """The terms of a run's inherited head (positions before `first`), which the index leaves to their owners."""
        if run.first == 0:
            return []
        rows = await self._storage.load_runs([run.run_id])
        record = await self._store.get_run(run.run_id)
        row = rows.get(run.run_id)
        if row is None or record is None:
            return []
        seqs = decode_ints(row.seqs)
        messages = await self._messages(record, {p: seqs[p] for p in range(run.first)})
        return [Counter(record_text_terms(messages[p])) if p in messages else Counter[str]() for p in range(run.first)]

    async def _messages(self, run: RunRecord, seqs: Mapping[int, int]) -> dict[int, ModelMessage]:
        """Record messages by position, from the store or from recent answers (a warm process re-shows them).

        Keyed by the run's token too: a deleted run id registered again reuses log numbers.
        """
        cache = self._shown
        key = (run.run_id, run.token)
        wanted = [seq for seq in seqs.values() if (*key, seq) not in cache]
        if wanted:
            for seq, message in (await self._store.read_messages(run.run_id, wanted)).items():
                cache[*key, seq] = _shown(message)
        out: dict[int, ModelMessage] = {}
        for position, seq in seqs.items():
            message = cache.get((*key, seq))
            if message is not None:
                cache.move_to_end((*key, seq))
                out[position] = message
        while len(cache) > self._max_shown:
            cache.popitem(last=False)
        return out

    async def _postings(
        self, scope: _Scope, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, list[tuple[IndexedRunView, Sequence[int], Sequence[int]]]]:
        missing = [term for term in dict.fromkeys(terms) if term not in scope.terms]
        if missing:
            found = await self._storage.postings(missing, conversation_id, all_scopes=all_scopes)
            for term in missing:
                decoded: list[tuple[IndexedRunView, Sequence[int], Sequence[int]]] = []
                for row in found.get(term, ()):
                    run = scope.runs.get(row.run_key)
                    if run is not None:  # indexed after this scope was loaded: next generation
                        positions, tfs = decode_postings(row.postings)
                        decoded.append((run, positions, tfs))
                scope.terms[term] = decoded
        out = {term: scope.terms[term] for term in terms}
        for term in terms:
            scope.terms.move_to_end(term)
        while len(scope.terms) > self._max_terms:
            scope.terms.popitem(last=False)
        return out

    async def _filtered(
        self, ordered: list[tuple[tuple[IndexedRunView, int], float]], filters: Filters
    ) -> list[tuple[tuple[IndexedRunView, int], float]]:
        runs = sorted({run.run_id for (run, _), _ in ordered})
        rows = await self._storage.load_runs(runs)
        roles = {run_id: row.roles for run_id, row in rows.items()}
        times = {run_id: decode_floats(row.times) for run_id, row in rows.items()}
        since = filters.since.timestamp() if filters.since is not None else None
        until = filters.until.timestamp() if filters.until is not None else None
        kept: list[tuple[tuple[IndexedRunView, int], float]] = []
        for (run, position), score in ordered:
            if run.run_id not in rows:
                continue
            if filters.roles is not None and ROLE_NAMES[roles[run.run_id][position]] not in filters.roles:
                continue
            moment = times[run.run_id][position]
            if since is not None and moment < since:
                continue
            if until is not None and moment > until:
                continue
            kept.append(((run, position), score))
        return kept


class _Window(Sequence[ModelMessage]):
    """A run's record as far as one answer needs it: its length, and the messages its windows show."""

    def __init__(self, size: int, messages: Mapping[int, ModelMessage]) -> None:
        self._size = size
        self._messages = messages

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> ModelMessage: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ModelMessage]: ...
    def __getitem__(self, index: int | slice) -> ModelMessage | Sequence[ModelMessage]:
        if isinstance(index, slice):
            return [self._messages[position] for position in range(*index.indices(self._size))]
        return self._messages[index]

    def __iter__(self) -> Iterator[ModelMessage]:
        return (self._messages[position] for position in range(self._size))


def _shown(message: ModelMessage) -> ModelMessage:
    return strip_artifacts(message) or message


_UNREAD = datetime.fromtimestamp(0, UTC)


def _section(run: IndexedRunView, whole: bool) -> Section:
    """A section standing for an indexed run before its record is read: its id, size and first only.

    `load_windows` replaces it with the run's record and the messages its hits show.
    """
    record = RunRecord(run_id=run.run_id, conversation_id=None, started_at=_UNREAD, token='')
    return Section(
        IndexedRun(record, -1, _Window(len(run.lengths), {}), (), [], {}), 0 if whole else run.first, run.order
    )


def _load_scope(generation: str, rows: Sequence[IndexedRunRow]) -> _Scope:
    runs: dict[int, IndexedRunView] = {}
    by_id: dict[str, IndexedRunView] = {}
    docs = length = 0
    for order, row in enumerate(rows):
        lengths = decode_ints(row.lengths)
        run = IndexedRunView(row.run_key, row.run_id, order, row.first, lengths)
        runs[row.run_key] = by_id[row.run_id] = run
        docs += max(len(lengths) - row.first, 0)
        length += sum(lengths[row.first :])
    return _Scope(generation, runs, by_id, docs, length)
