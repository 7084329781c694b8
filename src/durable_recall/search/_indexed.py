"""Ranking from the store's persistent index: statistics and postings, never snapshots.

A search first asks the store where the scope's index stands (one small read); if runs saved
snapshots since they were indexed, it catches them up (reading only those snapshots). It then
reads the postings of the query's terms, which carry each document's length, and scores them with
the same BM25 arithmetic as the in-memory corpus, over the same documents, so both rank alike.
Only the runs and messages the answer shows are read back from the store: a cold search never
lists the scope's runs.

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

from ..base import CorruptSnapshotError, RunRecord
from ..history import strip_artifacts
from ..index import (
    ROLE_NAMES,
    Bm25Params,
    IndexedRunRow,
    Indexer,
    Match,
    Postings,
    decode_chunk,
    decode_floats,
    decode_ints,
    idf,
    merged,
    record_text_terms,
    run_matches,
    scope_matches,
    top_scores,
)
from ..stores import StepStore
from ._corpus import Filters, Hit, IndexedRun, Section

__all__ = ('IndexedCorpus', 'Ranked')

_ALL = object()
_POSITION = (1 << 32) - 1
_RETRIES = 4


@dataclass(eq=False)
class _Run:
    """A run of the scope the search had to look at: its index row, record length and (once read) record."""

    row: IndexedRunRow
    size: int
    record: RunRecord | None = None

    @property
    def order(self) -> tuple[str, str]:
        """Corpus order: runs oldest first, ties by run id (as `list_runs` gives them)."""
        return self.row.started_at, self.row.run_id


@dataclass
class _Scope:
    generation: str
    conversation_id: str | None
    docs: int
    length: int
    terms: OrderedDict[str, Postings] = field(default_factory=OrderedDict[str, Postings])
    runs: dict[int, _Run] = field(default_factory=dict[int, _Run])


class _Moved(Exception):
    """The scope's index changed while a search read it: read it again."""


@dataclass(frozen=True, kw_only=True)
class Ranked:
    """The scored matches of one search, before windows and excerpts.

    Attributes:
        total: Documents searched.
        hits: Hits best first (or in the requested order); their sections name the run and its
            size, and `load_windows` reads the messages they show.
        rarity: Each query term's idf.
        unreadable: Runs whose snapshots could not be read.
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
        self._ranked: _Scope | None = None

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
            conversation = None if all_scopes else conversation_id
            self._scopes[key] = _Scope(status.generation, conversation, status.docs, status.length)
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

        Call `refresh` first. With `limit`, only the best `limit` hits are returned (ties broken
        by corpus order, as in the full ranking).
        """
        for _ in range(_RETRIES):
            try:
                return await self._rank(
                    terms,
                    params,
                    filters,
                    conversation_id=conversation_id,
                    all_scopes=all_scopes,
                    run_id=run_id,
                    limit=limit,
                )
            except _Moved:
                await self.refresh(conversation_id, all_scopes=all_scopes)
        raise RuntimeError('the search index kept changing while it was read; retry the search')

    async def _rank(
        self,
        terms: Sequence[str],
        params: Bm25Params,
        filters: Filters,
        *,
        conversation_id: str | None,
        all_scopes: bool,
        run_id: str | None,
        limit: int | None,
    ) -> Ranked:
        scope = self._ranked = self._scopes[_ALL if all_scopes else conversation_id]
        only: _Run | None = None
        head: list[Counter[str]] = []
        if run_id is not None:
            only = await self._run_by_id(scope, run_id, None if all_scopes else conversation_id)
            if only is None or only.size == 0:
                return Ranked(total=0, hits=[], rarity={}, unreadable=[], known_run=only is not None)
            head = await self._head(only)
            total = only.size
            lengths = decode_ints(only.row.lengths)
            length = sum(counts.total() for counts in head) + sum(lengths[only.row.first :])
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
            matches = run_matches(only.row.run_key, head, term, found) if only is not None else scope_matches(found)
            term_idf = idf(total, sum(end - start for _, start, end in matches))
            rarity[term] = term_idf
            scored_terms.append((term, term_idf, matches))
        filtered = filters.roles is not None or filters.since is not None or filters.until is not None
        # Pruning needs the best `limit` to be the answer's; filters decide that only afterwards.
        scores = top_scores(scored_terms, avgdl, params, None if filtered else limit)
        if filtered:
            scores = await self._filtered(scope, scores, filters)
        best = await self._best(scope, scores, limit)
        hits = [Hit(_section(run, whole=only is not None), key & _POSITION, score) for key, score, run in best]
        return Ranked(total=total, hits=hits, rarity=rarity, unreadable=[])

    async def _best(self, scope: _Scope, scores: dict[int, float], limit: int | None) -> list[tuple[int, float, _Run]]:
        """The best `limit` documents (all, for `None`) in corpus order among equal scores."""
        if limit is not None and len(scores) > limit:
            chosen = heapq.nsmallest(limit, ((-score, key) for key, score in scores.items()))
            # Whoever ties the last one may come first in corpus order: keep every tie.
            boundary = chosen[-1][0]
            picked = {key for _, key in chosen}
            chosen += [(-score, key) for key, score in scores.items() if -score == boundary and key not in picked]
        else:
            chosen = [(-score, key) for key, score in scores.items()]
        runs = await self._runs(scope, {key >> 32 for _, key in chosen})
        ordered = sorted(
            ((score, runs[key >> 32].order, key & _POSITION, key) for score, key in chosen if key >> 32 in runs),
        )
        if limit is not None:
            ordered = ordered[:limit]
        return [(key, -score, runs[key >> 32]) for score, _, _, key in ordered]

    async def times(self, hits: Sequence[Hit]) -> dict[tuple[str, int], float]:
        """Each hit's message time (POSIX seconds), for newest/oldest order (hits of the last `rank`)."""
        scope = self._ranked
        assert scope is not None, 'rank first'
        times = {run.row.run_id: decode_floats(run.row.times) for run in scope.runs.values()}
        out: dict[tuple[str, int], float] = {}
        for hit in hits:
            run_id = hit.section.indexed.run.run_id
            out[run_id, hit.position] = times[run_id][hit.position] if run_id in times else 0.0
        return out

    async def load_windows(self, hits: Sequence[Hit], context_lines: int) -> list[Hit]:
        """The hits with the messages their windows show, read from the store (or recent answers)."""
        scope = self._ranked
        assert scope is not None, 'rank first'
        by_id = {run.row.run_id: run for run in scope.runs.values()}
        wanted: dict[str, set[int]] = {}
        for hit in hits:
            section = hit.section
            start = max(section.first, hit.position - context_lines)
            end = min(len(section.indexed.messages), hit.position + context_lines + 1)
            wanted.setdefault(section.indexed.run.run_id, set()).update(range(start, end))
        shown = [by_id[run_id] for run_id in wanted]
        unread = [run.row.run_id for run in shown if run.record is None]
        if unread:
            records = await self._store.get_runs(unread)
            for run in shown:
                if run.record is None:
                    run.record = records.get(run.row.run_id)
        asked: list[tuple[RunRecord, dict[int, int]]] = []
        for run in shown:
            if run.record is None:
                continue  # deleted since it was ranked
            seqs = decode_ints(run.row.seqs)
            asked.append((run.record, {p: seqs[p] for p in wanted[run.row.run_id]}))
        messages = await self._shown_messages(asked)
        loaded: dict[str, IndexedRun] = {}
        for (record, _), found in zip(asked, messages, strict=True):
            run = by_id[record.run_id]
            loaded[record.run_id] = IndexedRun(record, run.row.seen, _Window(run.size, found), (), [], {})
        return [
            Hit(
                Section(loaded[hit.section.indexed.run.run_id], hit.section.first, hit.section.order),
                hit.position,
                hit.score,
            )
            for hit in hits
            if hit.section.indexed.run.run_id in loaded
        ]

    async def _run_by_id(self, scope: _Scope, run_id: str, conversation_id: str | None) -> _Run | None:
        """A run of the scope by id (`None` for a run outside it, unknown, or never indexed)."""
        record = await self._store.get_run(run_id)
        if record is None or (conversation_id is not None and record.conversation_id != conversation_id):
            return None
        row = (await self._storage.load_runs([run_id])).get(run_id)
        if row is None:
            return None
        run = _Run(row, len(row.lengths) // 4, record)
        scope.runs[row.run_key] = run
        return run

    async def _runs(self, scope: _Scope, run_keys: set[int]) -> dict[int, _Run]:
        """Runs by key, from the scope's cache or the store (one read); kept while the generation holds."""
        missing = sorted(key for key in run_keys if key not in scope.runs)
        if missing:
            for key, row in (await self._storage.runs_by_key(missing)).items():
                scope.runs[key] = _Run(row, len(row.lengths) // 4)
        return {key: scope.runs[key] for key in run_keys if key in scope.runs}

    async def _record(self, run: _Run) -> RunRecord | None:
        """The run's record, read once (only for runs an answer shows)."""
        if run.record is None:
            run.record = await self._store.get_run(run.row.run_id)
        return run.record

    async def _head(self, run: _Run) -> list[Counter[str]]:
        """The terms of a run's inherited head (positions before `first`), which the index leaves to their owners."""
        first = run.row.first
        if first == 0:
            return []
        record = await self._record(run)
        if record is None:
            return []
        seqs = decode_ints(run.row.seqs)
        messages = await self._messages(record, {p: seqs[p] for p in range(first)})
        return [Counter(record_text_terms(messages[p])) if p in messages else Counter[str]() for p in range(first)]

    async def _messages(self, run: RunRecord, seqs: Mapping[int, int]) -> dict[int, ModelMessage]:
        """One run's record messages by position (see `_shown_messages`)."""
        return (await self._shown_messages([(run, seqs)]))[0]

    async def _shown_messages(
        self, asked: Sequence[tuple[RunRecord, Mapping[int, int]]]
    ) -> list[dict[int, ModelMessage]]:
        """Record messages by position, per run asked, from recent answers or one read of the store.

        A warm process re-shows messages, so they are cached; keyed by the run's token too, since a
        deleted run id registered again reuses log numbers.
        """
        cache = self._shown
        unread: dict[str, list[int]] = {}
        for run, seqs in asked:
            missing = [seq for seq in seqs.values() if (run.run_id, run.token, seq) not in cache]
            if missing:
                unread.setdefault(run.run_id, []).extend(missing)
        if unread:
            tokens = {run.run_id: run.token for run, _ in asked}
            for run_id, found in (await self._store.read_logs(unread)).items():
                for seq, message in found.items():
                    cache[run_id, tokens[run_id], seq] = _shown(message)
        out: list[dict[int, ModelMessage]] = []
        for run, seqs in asked:
            messages: dict[int, ModelMessage] = {}
            for position, seq in seqs.items():
                key = (run.run_id, run.token, seq)
                message = cache.get(key)
                if message is not None:
                    cache.move_to_end(key)
                    messages[position] = message
            out.append(messages)
        while len(cache) > self._max_shown:
            cache.popitem(last=False)
        return out

    async def _postings(
        self, scope: _Scope, terms: Sequence[str], conversation_id: str | None, *, all_scopes: bool
    ) -> dict[str, Postings]:
        missing = [term for term in dict.fromkeys(terms) if term not in scope.terms]
        if missing:
            found = await self._storage.postings(missing, conversation_id, all_scopes=all_scopes)
            # Postings and statistics must come from one generation: if a run was indexed since
            # the statistics were read, start over with the new ones.
            status = await self._storage.status(conversation_id, all_scopes=all_scopes)
            if status.generation != scope.generation:
                raise _Moved
            for term in missing:
                rows = found.get(term, ())
                scope.terms[term] = [merged([decode_chunk(row.chunk, row.postings) for row in rows])] if rows else []
        out = {term: scope.terms[term] for term in terms}
        for term in terms:
            scope.terms.move_to_end(term)
        while len(scope.terms) > self._max_terms:
            scope.terms.popitem(last=False)
        return out

    async def _filtered(self, scope: _Scope, scores: dict[int, float], filters: Filters) -> dict[int, float]:
        runs = await self._runs(scope, {key >> 32 for key in scores})
        roles = {key: run.row.roles for key, run in runs.items()}
        times = {key: decode_floats(run.row.times) for key, run in runs.items()}
        since = filters.since.timestamp() if filters.since is not None else None
        until = filters.until.timestamp() if filters.until is not None else None
        kept: dict[int, float] = {}
        for key, score in scores.items():
            run_key, position = key >> 32, key & _POSITION
            if run_key not in runs:
                continue
            if filters.roles is not None and ROLE_NAMES[roles[run_key][position]] not in filters.roles:
                continue
            moment = times[run_key][position]
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


_UNREAD = datetime.fromtimestamp(0, UTC)


def _shown(message: ModelMessage) -> ModelMessage:
    return strip_artifacts(message) or message


def _section(run: _Run, *, whole: bool) -> Section:
    """The section a hit of `run` belongs to; `load_windows` fills in its record and the messages it shows."""
    record = run.record or RunRecord(run_id=run.row.run_id, conversation_id=None, started_at=_UNREAD, token='')
    indexed = IndexedRun(record, run.row.seen, _Window(run.size, {}), (), [], {})
    return Section(indexed, 0 if whole else run.row.first, run.row.run_key)
