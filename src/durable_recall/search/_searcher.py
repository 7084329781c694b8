"""One search, from a request to the answer string: scope, corpus, ranking, excerpts.

Engine-neutral: the capability decides where this runs (inline, a Temporal activity, a DBOS step).

Over a [`SnapshotHistorySource`][durable_recall.SnapshotHistorySource] the searcher ranks from the
store's persistent index ([`IndexedCorpus`][durable_recall.search._indexed.IndexedCorpus]): a
cold process reads postings, not snapshots. Over any other `HistorySource` it keeps each run's
tokenized record in memory between searches and asks the source for a run's record every time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal, TypeAlias, cast

import anyio

from ..base import CorruptSnapshotError
from ..history import HistorySource
from ..index import Bm25Params
from ..text import Role, message_time, tokenize
from . import _answer
from ._corpus import Filters, Hit, IndexedRun, Section, build_sections, rank_sections
from ._indexed import IndexedCorpus
from ._snapshot_source import SnapshotHistorySource

__all__ = ('Order', 'Outcome', 'SearchRequest', 'SearchScope', 'Searcher')

SearchScope: TypeAlias = Literal['conversation', 'all']
"""`'conversation'`: only runs with the calling run's conversation id; `'all'`: the whole store."""

Order: TypeAlias = Literal['relevance', 'newest', 'oldest']
"""How results are ordered: by BM25 score, or by message time among the matches."""

_FIRST_WINDOWS = 3
"""Hits whose windows a search reads before it knows whether the answer has room for more."""

_SEPARATOR = '\n\n---\n\n'
"""Between blocks (as `_answer` joins them): counted when estimating how many more would fit."""

_MAX_QUERY_TERMS = 64
_MAX_RUN_ID = 200
_ROLES: frozenset[str] = frozenset({'user', 'assistant', 'tool', 'system'})


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """The tool's arguments, as they cross a durable boundary (primitive fields only).

    Attributes:
        query: The model's query text.
        run_id: Limit the search to this run.
        roles: Only return messages from these roles.
        since: Only messages at or after this ISO-8601 time.
        until: Only messages at or before this ISO-8601 time.
        order: Result order.
    """

    query: str
    run_id: str | None = None
    roles: list[str] | None = None
    since: str | None = None
    until: str | None = None
    order: str = 'relevance'


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What one search found.

    Attributes:
        fixed: The whole answer when the search did not rank (no conversation, no terms, ...).
        query: The query as searched.
        total: Messages searched.
        hits: The matches the answer shows, best first (or in the requested order).
        terms: The query's distinct terms.
        rarity: Each term's idf in the scope.
        unreadable: Runs that could not be read, named in the answer.
        blocks: The first `hits`' blocks, rendered already (by a search that read only the
            windows of as many hits as the answer can show); `None` to render `hits` here.
        count: With `blocks`: how many blocks the search chose in all.
    """

    fixed: str | None = None
    query: str = ''
    total: int = 0
    hits: list[Hit] = field(default_factory=list[Hit])
    terms: list[str] = field(default_factory=list[str])
    rarity: Mapping[str, float] = field(default_factory=dict[str, float])
    unreadable: list[str] = field(default_factory=list[str])
    blocks: list[str] | None = None
    count: int = 0

    def answer(self, searcher: Searcher) -> str:
        """The text the model reads, within the searcher's byte budget."""
        note = f'\n\n{_answer.unreadable_note(self.unreadable)}' if self.unreadable else ''
        if self.fixed is not None:
            return self.fixed + note
        max_bytes = searcher.max_result_bytes - len(note.encode())
        if self.blocks is not None:
            return (
                _answer.format_blocks(self.query, self.total, self.blocks, count=self.count, max_bytes=max_bytes) + note
            )
        text = _answer.format_hits(
            self.query,
            self.total,
            self.hits,
            terms=self.terms,
            rarity=self.rarity,
            context_lines=searcher.context_lines,
            max_bytes=max_bytes,
            skip_tools=searcher.skip_tools,
        )
        return text + note


@dataclass
class Searcher:
    """Searches a history source; keeps tokenized records between calls."""

    source: HistorySource
    params: Bm25Params
    max_matches: int
    context_lines: int
    max_result_bytes: int
    skip_tools: Collection[str]
    max_indexed_runs: int = 4096
    _indexed: OrderedDict[str, IndexedRun] = field(default_factory=OrderedDict[str, IndexedRun], repr=False)
    _lock: anyio.Lock = field(default_factory=anyio.Lock, repr=False)
    _corpus: IndexedCorpus | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.source, SnapshotHistorySource):
            self._corpus = IndexedCorpus(self.source.store)

    async def search(self, request: SearchRequest, *, scope: SearchScope, conversation_id: str | None) -> str:
        """Answer one tool call; every expected outcome is a string, never an exception."""
        outcome = await self.rank(request, scope=scope, conversation_id=conversation_id)
        return outcome.answer(self)

    async def rank(self, request: SearchRequest, *, scope: SearchScope, conversation_id: str | None) -> Outcome:
        """The search as data: the chosen hits, or the fixed answer that stands in for them.

        `search` formats this for the model; a caller that wants matches as data (the CLI's
        `--json`) reads `hits` and gets exactly the blocks the answer shows.
        """
        if scope == 'conversation' and conversation_id is None:
            return Outcome(fixed=_answer.no_conversation())
        query = request.query.replace('\x00', ' ')
        problem = _check_request(request)
        if problem is not None:
            return Outcome(fixed=problem)
        if self._corpus is not None:
            return await self._rank_indexed(self._corpus, request, query, scope=scope, conversation_id=conversation_id)
        runs = await self.source.list_runs(conversation_id=conversation_id if scope == 'conversation' else None)
        if request.run_id is not None:
            runs = [run for run in runs if run.run_id == request.run_id]
            if not runs:
                return Outcome(fixed=_answer.no_run(request.run_id))
        indexed, unreadable = await self._index([run.run_id for run in runs])
        sections = build_sections(indexed, inherit=request.run_id is None)
        total = sum(section.size for section in sections)
        if request.run_id is not None and total == 0:
            return Outcome(fixed=_answer.no_run(request.run_id), unreadable=unreadable)
        if total == 0:
            empty = _answer.empty_conversation() if scope == 'conversation' else _answer.empty_store()
            return Outcome(fixed=empty, unreadable=unreadable)
        terms = list(dict.fromkeys(tokenize(query)))[:_MAX_QUERY_TERMS]
        if not terms:
            return Outcome(fixed=_answer.no_terms(query), unreadable=unreadable)
        hits, rarity = rank_sections(sections, terms, self.params, _filters(request))
        if not hits:
            return Outcome(fixed=_answer.no_matches(query, total), unreadable=unreadable)
        chosen = _distinct(_order(hits, cast(Order, request.order)), self.max_matches, self.context_lines)
        return Outcome(query=query, total=total, hits=chosen, terms=terms, rarity=rarity, unreadable=unreadable)

    async def _rank_indexed(
        self,
        corpus: IndexedCorpus,
        request: SearchRequest,
        query: str,
        *,
        scope: SearchScope,
        conversation_id: str | None,
    ) -> Outcome:
        all_scopes = scope == 'all'
        terms = list(dict.fromkeys(tokenize(query)))[:_MAX_QUERY_TERMS]
        async with self._lock:
            problems = await corpus.refresh(conversation_id, all_scopes=all_scopes)
            # Relevance order needs only the best few ranked exactly: start from `max_matches` and
            # widen while the windows of the hits chosen hide so many that more must be looked at.
            limit = self.max_matches if request.order == 'relevance' else None
            while True:
                ranked = await corpus.rank(
                    terms,
                    self.params,
                    _filters(request),
                    conversation_id=conversation_id,
                    all_scopes=all_scopes,
                    run_id=request.run_id,
                    limit=limit,
                )
                if limit is None or len(ranked.hits) < limit:
                    break
                if len(_distinct(ranked.hits, self.max_matches, self.context_lines)) >= self.max_matches:
                    break
                limit *= 4
            unreadable = [
                f'run {_answer.echo(error.run_id)}, snapshot {error.index} ({error.reason})' for error in problems
            ]
            if request.run_id is not None and (not ranked.known_run or ranked.total == 0):
                return Outcome(fixed=_answer.no_run(request.run_id), unreadable=unreadable)
            if ranked.total == 0:
                empty = _answer.empty_conversation() if scope == 'conversation' else _answer.empty_store()
                return Outcome(fixed=empty, unreadable=unreadable)
            if not terms:
                return Outcome(fixed=_answer.no_terms(query), unreadable=unreadable)
            if not ranked.hits:
                return Outcome(fixed=_answer.no_matches(query, ranked.total), unreadable=unreadable)
            hits = ranked.hits
            if request.order != 'relevance':
                times = await corpus.times(hits)
                hits = sorted(
                    hits,
                    key=lambda hit: times[hit.section.indexed.run.run_id, hit.position],
                    reverse=request.order == 'newest',
                )
            chosen = _distinct(hits, self.max_matches, self.context_lines)
            outcome = Outcome(query=query, total=ranked.total, terms=terms, rarity=ranked.rarity, unreadable=unreadable)
            return await self._shown(corpus, outcome, chosen)

    async def _shown(self, corpus: IndexedCorpus, outcome: Outcome, chosen: list[Hit]) -> Outcome:
        """The outcome with the windows of as many chosen hits as the answer has room for, read and rendered.

        A few kilobytes of tool output fill the answer after a few blocks; reading and decoding the
        windows of the other hits would be wasted. Windows are read for the first `_FIRST_WINDOWS`
        hits, then, while every block so far fits, for as many more as the room left would hold
        at the blocks' mean size (and one more, to find where the answer stops).
        """
        note = f'\n\n{_answer.unreadable_note(outcome.unreadable)}' if outcome.unreadable else ''
        max_bytes = self.max_result_bytes - len(note.encode())
        loaded: list[Hit] = []
        blocks: list[str] = []
        shown: set[tuple[int, int]] = set()
        start, count = 0, len(chosen)
        while start < len(chosen):
            if not blocks:
                end = start + _FIRST_WINDOWS
            else:
                mean = sum(len(block.encode()) for block in blocks) / len(blocks)
                room = max_bytes - sum(len(block.encode()) + len(_SEPARATOR) for block in blocks)
                end = start + max(int(room / mean), 0) + 1
            end = min(end, len(chosen))
            batch = await corpus.load_windows(chosen[start:end], self.context_lines)
            count -= (end - start) - len(batch)  # runs deleted since they were ranked
            start = end
            loaded += batch
            blocks += _answer.render_blocks(
                batch,
                shown,
                terms=outcome.terms,
                rarity=outcome.rarity,
                context_lines=self.context_lines,
                skip_tools=self.skip_tools,
            )
            fitting = _answer.blocks_fitting(outcome.query, outcome.total, blocks, count=count, max_bytes=max_bytes)
            if fitting < len(blocks):
                break
        if not loaded:
            return replace(outcome, fixed=_answer.no_matches(outcome.query, outcome.total))
        return replace(outcome, hits=loaded, blocks=blocks, count=count)

    async def _index(self, run_ids: list[str]) -> tuple[list[IndexedRun], list[str]]:
        indexed: list[IndexedRun] = []
        unreadable: list[str] = []
        async with self._lock:
            for run_id in run_ids:
                try:
                    history = await self.source.run_history(run_id)
                except CorruptSnapshotError as error:
                    unreadable.append(f'run {_answer.echo(error.run_id)}, snapshot {error.index} ({error.reason})')
                    continue
                if history is None:
                    continue
                cached = self._indexed.get(run_id)
                if cached is None or cached.version != history.version or cached.run != history.run:
                    cached = IndexedRun.build(history, self.skip_tools)
                    self._indexed[run_id] = cached
                self._indexed.move_to_end(run_id)
                indexed.append(cached)
            # Bounded, least recently searched out: one process may serve many conversations.
            while len(self._indexed) > self.max_indexed_runs:
                self._indexed.popitem(last=False)
        return indexed, unreadable


def _check_request(request: SearchRequest) -> str | None:
    if request.run_id is not None and (len(request.run_id) > _MAX_RUN_ID or not request.run_id):
        return _answer.no_run(request.run_id)
    if request.order not in ('relevance', 'newest', 'oldest'):
        return f'Unknown order {_answer.echo(request.order)}: use relevance, newest or oldest.'
    unknown = sorted(set(request.roles or ()) - _ROLES)
    if unknown:
        return f'Unknown role(s) {", ".join(_answer.echo(r) for r in unknown)}: use user, assistant, tool or system.'
    for name, value in (('since', request.since), ('until', request.until)):
        if value is not None and _parse_time(value) is None:
            return f'{name}={_answer.echo(value)} is not an ISO-8601 time such as 2026-01-31T09:30:00Z.'
    return None


def _parse_time(value: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value.replace('Z', '+00:00'))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.astimezone()


def _filters(request: SearchRequest) -> Filters:
    roles = frozenset(cast(list[Role], request.roles)) if request.roles else None
    since = _parse_time(request.since) if request.since else None
    until = _parse_time(request.until) if request.until else None
    return Filters(roles=roles, since=since, until=until)


def _order(hits: list[Hit], order: Order) -> list[Hit]:
    if order == 'relevance':
        return hits

    def moment(hit: Hit) -> datetime:
        return message_time(hit.section.indexed.messages[hit.position], hit.section.indexed.run.started_at)

    return sorted(hits, key=moment, reverse=order == 'newest')


def _distinct(hits: list[Hit], limit: int, context_lines: int) -> list[Hit]:
    """The first `limit` hits whose own message no earlier hit's window shows."""
    shown: set[tuple[int, int]] = set()
    chosen: list[Hit] = []
    for hit in hits:
        if len(chosen) >= limit:
            break
        if (hit.section.order, hit.position) in shown:
            continue
        chosen.append(hit)
        section: Section = hit.section
        start = max(section.first, hit.position - context_lines)
        end = min(len(section.indexed.messages), hit.position + context_lines + 1)
        shown.update((section.order, position) for position in range(start, end))
    return chosen
