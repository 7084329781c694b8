"""Ranking from an index: statistics and postings, never records; then reading back only what is shown.

A damaged index (statistics out of range, postings or run arrays that do not decode or name
positions a run does not have) never makes a search raise: what is damaged is left out, the
answer names it and says how to repair it (`durable-recall check --rebuild-index`), as it names
a snapshot that does not read.

A search first refreshes its scope (one status read when nothing is pending; otherwise the pending
runs are caught up). It then reads the postings of the query's terms, which carry each document's
length, and scores them by BM25 over exactly the scope's documents. Only the runs and messages an
answer shows are read back: a cold search never lists the scope's runs.

What a process keeps between searches is tagged with the scope's generation: while no run of the
scope is indexed again, a warm search reads nothing but the generation and the postings of terms
it has not seen yet.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence

from ..base import DurableRecallError
from ..index import (
    Match,
    Postings,
    Progress,
    Unreadable,
    decode_ints,
    idf,
    record_text_terms,
    run_matches,
    scope_matches,
    smoothed,
    smoothed_within,
    top_scores,
)
from ._ask import Ask, Ranked
from ._corpus import Corpus
from ._damage import DAMAGE, note_damage, recount, size_of, time_at
from ._fusion import fuse
from ._hits import Candidate, Doc, Hit
from ._loading import load_hits
from ._prefetch import Prefetch, caught_up_view, read_rows
from ._reads import Reader
from ._run_ids import by_short_id
from ._scope_cache import CachedRun, CachedScope
from ._selection import best_keys, filtered
from ._shown_cache import ShownCache
from ._terms import read_postings
from ._windows import Layout, in_run_window, leaves_run

__all__ = ('Ask', 'Ranked', 'Ranker')

_ALL = object()
_POSITION = (1 << 32) - 1
_RETRIES = 4


class _Moved(Exception):
    """The scope's index changed while a search read it: read it again."""


class Ranker:
    """Ranks a corpus's documents, keeping decoded postings and run rows per scope generation."""

    def __init__(
        self,
        corpus: Corpus,
        *,
        max_cached_terms: int = 4096,
        max_cached_scopes: int = 64,
        cache: ShownCache | None = None,
        max_read_ahead: int = 2048,
        context_lines: int = 0,
    ) -> None:
        self._corpus = corpus
        self._context = context_lines
        """The windows' reach (`SearchEngine.context_lines`): neighbouring runs read with a hit's (`_near`)."""
        self._scopes: OrderedDict[object, CachedScope] = OrderedDict()
        self._max_terms = max_cached_terms
        self._max_scopes = max_cached_scopes
        self._reader = Reader(corpus, cache=cache, max_read_ahead=max_read_ahead)
        self._ranked: CachedScope | None = None
        self._searches = 0
        """Searches begun (`refresh` calls): the first keeps common words to Python (see `_terms`)."""
        self._passing: dict[str, Postings] = {}
        """The current search's postings that the term cache does not keep (see `read_postings`)."""
        self._across: str | None = None
        """The conversation whose record windows walk, for the last `rank` (`None`: windows stay in their run)."""

    @property
    def corpus(self) -> Corpus:
        """The corpus ranked."""
        return self._corpus

    @property
    def unreadable(self) -> list[Unreadable]:
        """What the last refresh and the reads since could not read (reset by `refresh`)."""
        return self._reader.unreadable

    async def refresh(
        self,
        conversation_id: str | None,
        *,
        all_scopes: bool,
        progress: Progress | None = None,
        terms: Sequence[str] = (),
        across: bool = False,
    ) -> None:
        """Catch the scope's index up, for a search about to rank; what could not be read goes to `unreadable`.

        With the query's `terms`, and `across` (windows walk the conversation), a corpus that can
        reads the postings and spans the search needs with the status (`_prefetch`).
        """
        self._searches += 1
        corpus, cached = self._corpus, self._scopes.get(_ALL if all_scopes else conversation_id)
        found, problems = await caught_up_view(
            corpus, cached, conversation_id, all_scopes=all_scopes, terms=terms, across=across, progress=progress
        )
        await self._refresh(conversation_id, all_scopes=all_scopes, progress=progress, found=found, problems=problems)

    async def _refresh(
        self,
        conversation_id: str | None,
        *,
        all_scopes: bool,
        progress: Progress | None = None,
        found: Prefetch | None = None,
        problems: Sequence[Unreadable] = (),
    ) -> None:
        self._passing.clear()  # of the generation read before
        if found is not None:
            status = found.view.status
        else:
            status, problems = await self._corpus.refresh(conversation_id, all_scopes=all_scopes, progress=progress)
        self._reader.unreadable = list(problems)
        key = _ALL if all_scopes else conversation_id
        cached = self._scopes.get(key)
        if cached is None or cached.generation != status.generation:
            docs, length = status.docs, status.length
            if docs < 0 or length < 0:
                docs, length = await recount(self._corpus.storage, conversation_id, all_scopes=all_scopes)
                self._damaged(f'its statistics are out of range ({status.docs} documents, length {status.length})')
            self._scopes[key] = CachedScope(status.generation, docs, length)
        if found is not None:
            found.keep(self._scopes[key], self._passing, first_search=self._searches <= 1)
        self._scopes.move_to_end(key)
        while len(self._scopes) > self._max_scopes:
            self._scopes.popitem(last=False)

    def _damaged(self, what: str) -> None:
        """Name damage to the index in the answer (once), with the repair."""
        note_damage(self._reader.unreadable, what)

    async def rank(self, ask: Ask) -> Ranked:
        """Exact BM25 over the scope's documents (or one run's whole record, for `ask.run_id`).

        Call `refresh` first. With `ask.limit`, only the best `limit` candidates are returned (ties
        broken by corpus order, as in the full ranking). An index too damaged to rank from gives no
        candidates, and the damage is named in `unreadable`.
        """
        scope = self._scopes[_ALL if ask.all_scopes else ask.conversation_id]
        for _ in range(_RETRIES):
            try:
                scope = self._ranked = self._scopes[_ALL if ask.all_scopes else ask.conversation_id]
                across = ask.run_id is None and not ask.all_scopes
                self._across = ask.conversation_id if across else None
                return await self._rank(scope, ask)
            except _Moved:
                await self._refresh(ask.conversation_id, all_scopes=ask.all_scopes)
            except DurableRecallError:
                raise
            except DAMAGE as error:
                self._damaged(f'{type(error).__name__}: {error}')
                return Ranked(total=max(scope.docs, 0), candidates=[], rarity={})
        raise RuntimeError('the search index kept changing while it was read; retry the search')

    async def _rank(self, scope: CachedScope, ask: Ask) -> Ranked:
        terms, params, filters, limit = ask.terms, ask.params, ask.filters, ask.limit
        conversation_id, all_scopes, run_id = ask.conversation_id, ask.all_scopes, ask.run_id
        only: CachedRun | None = None
        head: list[Counter[str]] = []
        if run_id is not None:
            only = await self._run_by_id(scope, run_id, None if all_scopes else conversation_id)
            if only is None or only.size == 0:
                return Ranked(total=0, candidates=[], rarity={}, known_run=only is not None)
            head = await self._head(only)
            total = only.size
            lengths = decode_ints(only.row.lengths)
            length = sum(counts.total() for counts in head) + sum(lengths[only.row.first :])
        else:
            total, length = scope.docs, scope.length
        if total <= 0:
            return Ranked(total=0, candidates=[], rarity={})
        postings = await read_postings(
            self._corpus.storage,
            scope.terms,
            scope.generation,
            terms,
            conversation_id,
            all_scopes=all_scopes,
            first_search=self._searches <= 1,
            passing=self._passing,
            max_terms=self._max_terms,
        )
        if postings is None:
            raise _Moved
        rarity: dict[str, float] = {}
        scored_terms: list[tuple[str, float, Sequence[Match]]] = []
        for term in dict.fromkeys(terms):
            found = postings.get(term, [])
            matches = run_matches(only.row.run_key, head, term, found) if only is not None else scope_matches(found)
            df = sum(end - start for _, start, end in matches)
            if df > total:
                self._damaged(f'term {term!r} has {df} postings among {total} documents')
            term_idf = idf(total, df)
            rarity[term] = term_idf
            scored_terms.append((term, term_idf, matches))
        # Pruning needs the best `limit` to be the answer's; filters, neighbours and fusion decide that only afterwards.
        near = ask.similarity
        weighing = any(params.neighbours)
        exact = filters.active or near is not None or ask.count or weighing
        scores = top_scores(scored_terms, length / total, params, None if exact else limit)
        if weighing and scores:  # the same documents (only matches are weighed): counts stay BM25's
            scores = await self._weighed(scope, scores, params.neighbours)
        if near is not None and only is not None:
            near = {key: value for key, value in near.items() if key >> 32 == only.row.run_key}
        if filters.active:
            scores = filtered(scores, await self._runs(scope, {key >> 32 for key in scores}), filters)
            if near is not None:
                near = filtered(near, await self._runs(scope, {key >> 32 for key in near}), filters)
        if near is not None:
            scores = fuse(scores, near, weight=ask.weight)
        matched = len(scores) if ask.count else None
        best = await self._best(scope, scores, limit)
        candidates = [
            Candidate(run.row.run_id, run.row.run_key, 0 if only else run.row.first, run.size, key & _POSITION, score)
            for key, score, run in best
        ]
        return Ranked(total=total, candidates=candidates, rarity=rarity, matched=matched)

    async def _best(
        self, scope: CachedScope, scores: dict[int, float], limit: int | None
    ) -> list[tuple[int, float, CachedRun]]:
        """The best `limit` documents (all, for `None`) in corpus order among equal scores."""
        chosen = best_keys(scores, limit)
        keys = {key >> 32 for _, key in chosen}
        # The neighbours their windows reach come in the same read: showing them then reads no rows.
        runs = await self._runs(scope, keys, ahead=self._near(scope, keys))
        past = [
            (run, key & _POSITION) for _, key in chosen if (run := runs.get(key >> 32)) and key & _POSITION >= run.size
        ]
        for run, position in past[:1]:  # a damaged posting, or run row: one note says it
            self._damaged(f'it names position {position} of run {run.row.run_id!r}, which has {run.size}')
        ordered = sorted(
            (score, runs[key >> 32].order, key & _POSITION, key)
            for score, key in chosen
            if key >> 32 in runs and key & _POSITION < runs[key >> 32].size
        )
        if limit is not None:
            ordered = ordered[:limit]
        return [(key, -score, runs[key >> 32]) for score, _, _, key in ordered]

    def times(self, candidates: Sequence[Candidate]) -> list[float]:
        """Each candidate's message time (POSIX seconds), for newest/oldest order (of the last `rank`)."""
        scope = self._ranked
        assert scope is not None, 'rank first'
        # Only the candidates' runs: the scope's cache may hold many more.
        problems = self._reader.unreadable
        times = {key: scope.runs[key].shown_times(problems) for key in {found.run_key for found in candidates}}
        return [time_at(times[found.run_key], found.position) for found in candidates]

    async def windows(
        self, context_lines: int, candidates: Sequence[Candidate]
    ) -> Callable[[Candidate], tuple[Doc, ...]]:
        """What the block of each of `candidates` shows: its documents in order (for the last `rank`; see `_windows`).

        The conversation's spans are read (once per generation) only when a window reaches past
        its hit's run: a window that stays inside is the same either way, and a cold search of
        long runs then never lists the conversation's runs.
        """
        scope = self._ranked
        assert scope is not None, 'rank first'
        if self._across is None or (
            scope.layout is None and not any(leaves_run(found, context_lines) for found in candidates)
        ):
            return lambda found: in_run_window(found, context_lines)
        layout = await self._layout(scope, self._across)
        if layout is None:
            return lambda found: in_run_window(found, context_lines)
        return lambda found: layout.window(found, context_lines)

    async def _layout(self, scope: CachedScope, conversation_id: str) -> Layout | None:
        """The conversation's record (read once per generation), or `None` when it does not decode (named)."""
        if scope.layout is None:
            try:
                scope.layout = Layout(await self._corpus.storage.scope_spans(conversation_id))
            except DurableRecallError:
                raise
            except DAMAGE as error:
                self._damaged(f'a run row of the conversation does not decode ({error})')
                return None
        return scope.layout

    async def _weighed(
        self, scope: CachedScope, scores: dict[int, float], weights: Sequence[float]
    ) -> dict[int, float]:
        """The scores with their neighbours' shares (`index._neighbours`), the neighbours as the windows walk.

        A conversation-scoped search weighs along the conversation's record, across runs; a `run_id`
        search and a store-wide search within each run (and so does one whose record does not read).
        """
        if self._across is not None and (layout := await self._layout(scope, self._across)) is not None:
            return smoothed(scores, layout.record(len(weights)), weights)
        return smoothed_within(scores, weights)

    async def load(
        self,
        candidates: Sequence[Candidate],
        windows: Sequence[tuple[Doc, ...]],
        *,
        ahead: Sequence[tuple[Doc, ...]] = (),
    ) -> list[Hit]:
        """The candidates as hits, with the messages of their windows (`windows`, one per candidate).

        A candidate whose run was deleted since, or whose own message no longer reads, is dropped
        (the latter is named in `unreadable`); a neighbour that no longer reads is left out.
        `ahead` are windows the next call is likely to ask for: their runs and stored messages are
        read in the same round trips, not prepared (see `Reader.messages`).
        """
        scope = self._ranked
        assert scope is not None, 'rank first'
        wanted: dict[int, set[int]] = {}
        for window in windows:
            for run_key, position in window:
                wanted.setdefault(run_key, set()).add(position)
        later: dict[int, set[int]] = {}
        for window in ahead:
            for run_key, position in window:
                later.setdefault(run_key, set()).add(position)
        runs = await self._runs(scope, set(wanted), ahead=set(later))
        return await load_hits(self._reader, runs, wanted, later, candidates, windows, damaged=self._damaged)

    async def _run_by_id(self, scope: CachedScope, run_id: str, conversation_id: str | None) -> CachedRun | None:
        """A run of the scope by id (`None` for a run outside it, unknown, unreadable or never indexed)."""
        row = (await self._corpus.storage.load_runs([run_id])).get(run_id)
        if row is None:
            rows = await self._corpus.storage.scope_runs(conversation_id, all_scopes=conversation_id is None)
            row = by_short_id(rows, run_id)
        if row is None:
            return None
        run = CachedRun(row, size_of(self._reader.unreadable, row))
        run.record = (await self._reader.records([row.run_id])).get(row.run_id)
        if run.record is None or (conversation_id is not None and run.record.conversation_id != conversation_id):
            return None
        scope.runs[row.run_key] = run
        return run

    async def _runs(
        self, scope: CachedScope, run_keys: set[int], *, ahead: frozenset[int] | set[int] = frozenset()
    ) -> dict[int, CachedRun]:
        """Runs by key, from the scope's cache or the index (one read); kept while the generation holds.

        When there is a read to make, `ahead`'s runs are read along, and returned with the others.
        Where the corpus reads records with index rows (`ViewingCorpus.rows_with_records`), the
        runs come with their records, and showing them reads no records apart.
        """
        missing = [key for key in run_keys if key not in scope.runs]
        if missing:
            missing += (key for key in ahead - run_keys if key not in scope.runs)
            rows, records = await read_rows(self._corpus, sorted(missing))
            for key, row in rows.items():
                scope.runs[key] = CachedRun(row, size_of(self._reader.unreadable, row), records.get(row.run_id))
        return {key: scope.runs[key] for key in run_keys | ahead if key in scope.runs}

    def _near(self, scope: CachedScope, run_keys: set[int]) -> set[int]:
        """Runs a window of these runs' documents may reach along the record (read with them: see `_best`)."""
        layout = scope.layout if self._across is not None else None
        return {near for key in run_keys for near in layout.near(key, self._context)} if layout else set()

    async def _head(self, run: CachedRun) -> list[Counter[str]]:
        """The terms of a run's inherited head (positions before `first`), which the index leaves to their owners."""
        first = run.row.first
        if first == 0 or run.record is None:
            return []
        seqs = run.seqs
        asked = [(run.record, {p: seqs[p] for p in range(first)})]
        [messages] = await self._reader.decoded(asked, [run.summaries], keys={run.record.run_id: run.row.run_key})
        return [Counter(record_text_terms(messages[p])) if p in messages else Counter[str]() for p in range(first)]
