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
from ._scoring import IndexedRunView, Match, run_matches, scope_matches, top_scores

__all__ = ('IndexedCorpus', 'Ranked')

_ALL = object()
_POSITION = (1 << 32) - 1


@dataclass
class _Scope:
    generation: str
    runs: dict[int, IndexedRunView]
    by_id: dict[str, IndexedRunView]
    by_order: list[IndexedRunView]
    docs: int
    length: int
    details: dict[str, tuple[RunRecord, IndexedRunRow]] = field(
        default_factory=dict[str, tuple[RunRecord, IndexedRunRow]]
    )
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
        self._ranked: _Scope | None = None
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
        scope = self._ranked = self._scopes[_ALL if all_scopes else conversation_id]
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
        scored_terms: list[tuple[str, float, Sequence[Match]]] = []
        for term in dict.fromkeys(terms):
            found = postings.get(term, [])
            matches = run_matches(only, head, term, found, total) if only is not None else scope_matches(found)
            term_idf = idf(total, sum(end - start for _, _, _, _, start, end in matches))
            rarity[term] = term_idf
            scored_terms.append((term, term_idf, matches))
        filtered = filters.roles is not None or filters.since is not None or filters.until is not None
        # Pruning needs the best `limit` to be the answer's; filters decide that only afterwards.
        scores = top_scores(scored_terms, avgdl, params, None if filtered else limit)
        if filtered:
            scores = await self._filtered(scope, scores, filters)
        # Keys are `order << 32 | position`, so ordering by (-score, key) is the corpus tie order.
        # Only the best `limit` need sorting: the rest can never reach the answer.
        ranking = ((-score, key) for key, score in scores.items())
        best = heapq.nsmallest(limit, ranking) if limit is not None else sorted(ranking)
        hits = [
            Hit(_section(scope.by_order[key >> 32], only is not None), key & _POSITION, -score) for score, key in best
        ]
        return Ranked(total=total, hits=hits, rarity=rarity, unreadable=[])

    async def times(self, hits: Sequence[Hit]) -> dict[tuple[str, int], float]:
        """Each hit's message time (POSIX seconds), for newest/oldest order (hits of the last `rank`)."""
        details = await self._details({hit.section.indexed.run.run_id for hit in hits})
        times = {run_id: decode_floats(row.times) for run_id, (_, row) in details.items()}
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
        details = await self._details(set(wanted))
        loaded: dict[str, IndexedRun] = {}
        for run_id, positions in wanted.items():
            if run_id not in details:
                continue
            record, row = details[run_id]
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
        details = await self._details({run.run_id})
        if run.run_id not in details:
            return []
        record, row = details[run.run_id]
        seqs = decode_ints(row.seqs)
        messages = await self._messages(record, {p: seqs[p] for p in range(run.first)})
        return [Counter(record_text_terms(messages[p])) if p in messages else Counter[str]() for p in range(run.first)]

    async def _details(self, run_ids: set[str]) -> dict[str, tuple[RunRecord, IndexedRunRow]]:
        """Run records and full index rows of runs of the last ranked scope, kept while its generation holds."""
        scope = self._ranked
        assert scope is not None, 'rank first'
        missing = sorted(run_id for run_id in run_ids if run_id not in scope.details)
        if missing:
            rows = await self._storage.load_runs(missing)
            for run_id in missing:
                record = await self._store.get_run(run_id)
                if record is not None and run_id in rows:
                    scope.details[run_id] = (record, rows[run_id])
        return {run_id: scope.details[run_id] for run_id in run_ids if run_id in scope.details}

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

    async def _filtered(self, scope: _Scope, scores: dict[int, float], filters: Filters) -> dict[int, float]:
        orders = sorted({key >> 32 for key in scores})
        rows = await self._storage.load_runs([scope.by_order[order].run_id for order in orders])
        roles: dict[int, bytes] = {}
        times: dict[int, Sequence[float]] = {}
        for order in orders:
            row = rows.get(scope.by_order[order].run_id)
            if row is not None:
                roles[order], times[order] = row.roles, decode_floats(row.times)
        since = filters.since.timestamp() if filters.since is not None else None
        until = filters.until.timestamp() if filters.until is not None else None
        kept: dict[int, float] = {}
        for key, score in scores.items():
            order, position = key >> 32, key & _POSITION
            if order not in roles:
                continue
            if filters.roles is not None and ROLE_NAMES[roles[order][position]] not in filters.roles:
                continue
            moment = times[order][position]
            if since is not None and moment < since:
                continue
            if until is not None and moment > until:
                continue
            kept[key] = score
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
    by_order: list[IndexedRunView] = []
    docs = length = 0
    for order, row in enumerate(rows):
        lengths = decode_ints(row.lengths)
        run = IndexedRunView(row.run_key, row.run_id, order, row.first, lengths)
        runs[row.run_key] = by_id[row.run_id] = run
        by_order.append(run)
        docs += max(len(lengths) - row.first, 0)
        length += sum(lengths[row.first :])
    return _Scope(generation, runs, by_id, by_order, docs, length)
