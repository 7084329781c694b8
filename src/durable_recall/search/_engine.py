"""The one search engine: from a request to the answer string, for the tool and the CLI alike.

Engine-neutral: the capability decides where a search runs (inline, a Temporal activity, a DBOS
step). Over a `SnapshotHistorySource` the engine reads the store's persistent index (a cold
process reads postings, not snapshots), and over a `ConversationStoreSource` of our SQL stores the
index in that store's database (`ConversationCorpus`); over any other `HistorySource`, an in-memory
index of the same shape (`SourceCorpus`). Ranking, filters, windows and rendering are the same code for both.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace

from pydantic_ai.embeddings import Embedder

from ..base import DurableRecallError, StoreUnavailableError
from ..history import HistorySource
from ..index import Bm25Params, MemoryVectors, Progress, VectorStorage
from ..text import ENGLISH_STOPWORDS, stop_terms
from . import _answer
from ._blocks import render
from ._corpus import Corpus, StoreCorpus
from ._embedding import Ranking, check_ranking, local_embedder
from ._fusion import DEFAULT_WEIGHT
from ._hits import Candidate, Doc, Hit
from ._outcome import Outcome
from ._rankers import Rankers
from ._ranking import Ask, Ranker
from ._request import SearchRequest, SearchScope, check_request, filters_of, query_terms
from ._semantic import SemanticIndex
from ._snapshot_source import SnapshotHistorySource
from ._source_corpus import SourceCorpus
from ._warm_up import warm_up
from ._withheld import withheld_only

__all__ = ('SearchEngine', 'corpus_for', 'search_failed', 'vectors_for')

_log = logging.getLogger('durable_recall.search')


def corpus_for(source: HistorySource) -> Corpus:
    """The persistent index where there is one, else an in-memory index of the source.

    A `SnapshotHistorySource` reads its step store's index; a `ConversationStoreSource` over
    `SqliteConversationStore` or `PostgresConversationStore` the index in that store's database.
    """
    if isinstance(source, SnapshotHistorySource):
        return StoreCorpus(source.store)
    # `conversations` needs a newer pydantic-ai; a source of it exists only if it was imported.
    if 'durable_recall.conversations' in sys.modules:
        from ..conversations import ConversationStoreSource

        if isinstance(source, ConversationStoreSource):
            from ._conversation_corpus import conversation_corpus

            corpus = conversation_corpus(source)
            if corpus is not None:
                return corpus
    return SourceCorpus(source)


def vectors_for(source: HistorySource) -> VectorStorage:
    """Where hybrid ranking keeps message vectors: the step store's own table, else this process's memory."""
    if isinstance(source, SnapshotHistorySource):
        vectors = getattr(source.store, 'vector_storage', None)
        if callable(vectors):
            found = vectors()
            if isinstance(found, VectorStorage):
                return found
    return MemoryVectors()


@dataclass
class SearchEngine:
    """Searches a history source: catches its index up, ranks, reads back and renders what it shows.

    Args:
        source: Where history comes from.
        params: BM25 parameters.
        max_matches: The most result blocks per answer.
        context_lines: Messages shown before and after each match: along the conversation's record
            in a conversation-scoped search, within the match's run otherwise (see `_windows`).
        max_result_bytes: The most UTF-8 bytes one answer may have.
        skip_tools: Tools whose calls and returns are shown as a placeholder (the search tool's own);
            a `text.SkipTools` also withholds tools by their `ui_visibility` (`_withheld`).
        ranking: `'bm25'`, or `'hybrid'`: BM25 fused with embedding similarity (`_fusion`).
        embedder: Hybrid ranking's embedder (`None`: the local default, `_embedding`).
        hybrid_weight: The similarity side's share in fusion.
        stopwords: Words left out of a query that has others (`text.ENGLISH_STOPWORDS` by default, as the tool).

    Raises:
        ValueError, TypeError, ImportError: A ranking configuration that cannot work (`check_ranking`).
    """

    source: HistorySource
    params: Bm25Params
    max_matches: int
    context_lines: int
    max_result_bytes: int
    skip_tools: Collection[str]
    ranking: Ranking = 'bm25'
    embedder: Embedder | None = None
    hybrid_weight: float = DEFAULT_WEIGHT
    stopwords: frozenset[str] = ENGLISH_STOPWORDS
    _rankers: Rankers = field(init=False, repr=False)
    _semantic: SemanticIndex | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        # Configuration errors at construction (the command line builds engines directly).
        check_ranking(self.ranking, self.embedder, self.hybrid_weight)
        # Hybrid ranking's vectors are one index for all: its searches keep to one ranker, one at a time.
        self._rankers = Rankers(
            corpus_for(self.source), context_lines=self.context_lines, per_conversation=self.ranking == 'bm25'
        )
        warm_up()  # the first search's one-time costs, paid at startup instead (see `_warm_up`)

    async def _similarity(
        self, query: str, conversation_id: str | None, *, all_scopes: bool, notes: list[str]
    ) -> dict[int, float] | None:
        """The similarity side of a hybrid search (`None` for BM25, or when the embedder failed: noted)."""
        if self.ranking != 'hybrid':
            return None
        try:
            if self._semantic is None:
                embedder = self.embedder if self.embedder is not None else await local_embedder()
                self._semantic = SemanticIndex(self._rankers.corpus, vectors_for(self.source), embedder)
            return await self._semantic.similarity(query, conversation_id, all_scopes=all_scopes)
        except DurableRecallError:
            raise
        except Exception as error:  # an embedder's failure (network, quota, ...) must not fail the search
            notes.append(_answer.semantic_failed(error))
            return None

    async def search(self, request: SearchRequest, *, scope: SearchScope, conversation_id: str | None) -> str:
        """Answer one tool call: every outcome is a string, except an outage.

        A store that fails inside the search (a refused value, a constraint, damage the reads do
        not name) gets a fixed answer naming only the error's class: its message may name another
        conversation's ids or data. The error itself goes to the `durable_recall.search` logger, for
        the operator.

        `StoreUnavailableError` (the store cannot be reached) is raised: it is transient, and the
        durable engines retry the search's activity or step until the store is back, so the model
        gets its answer instead of being told to do without it.
        """
        try:
            outcome = await self.rank(request, scope=scope, conversation_id=conversation_id)
        except StoreUnavailableError:
            raise
        except Exception as error:
            _log.warning('search failed (%s)', type(error).__name__, exc_info=True)
            return search_failed(error)
        return outcome.answer(self.max_result_bytes)

    async def rank(
        self,
        request: SearchRequest,
        *,
        scope: SearchScope,
        conversation_id: str | None,
        progress: Progress | None = None,
        count_matches: bool = False,
        keep: Callable[[Hit], bool] | None = None,
    ) -> Outcome:
        """The search as data: the hits the answer shows and their blocks, or the fixed answer instead.

        Args:
            request: The tool's arguments.
            scope: `'conversation'` or `'all'`.
            conversation_id: The calling run's conversation.
            progress: Called with the runs caught up, as the scope's index catches up.
            count_matches: Count every matching message (`Outcome.matched`), apart from windows,
                `max_matches` and the budget: exact, so it scores every match (the tool does not ask).
            keep: Which loaded hits the answer may show (`AutoRecall` leaves out what the model sees).
        """
        if scope == 'conversation' and conversation_id is None:
            return Outcome(fixed=_answer.no_conversation())
        problem = check_request(request)  # first: it checks the types the lines below rely on
        if problem is not None:
            return Outcome(fixed=problem)
        query = request.query.replace('\x00', ' ')
        terms = query_terms(query, stop_terms(self.stopwords))  # bounded: reads at most MAX_QUERY_BYTES of the query
        filters = filters_of(request)
        all_scopes = scope == 'all'
        ranker, lock = self._rankers.of(conversation_id, all_scopes=all_scopes)
        async with lock:
            across = request.run_id is None and not all_scopes  # windows walk the conversation's record
            await ranker.refresh(conversation_id, all_scopes=all_scopes, progress=progress, terms=terms, across=across)
            notes: list[str] = []
            similarity = None
            if terms:
                similarity = await self._similarity(query, conversation_id, all_scopes=all_scopes, notes=notes)
            # Relevance order needs only the best few ranked exactly: start from `max_matches` and
            # widen while the windows of the hits chosen hide so many that more must be looked at.
            # Neighbour weighting scores every match anyway, and ranks neighbours (which one block
            # shows) together: there more are asked for at once, which costs only their sort.
            ask = Ask(
                terms=terms,
                params=self.params,
                filters=filters,
                conversation_id=conversation_id,
                all_scopes=all_scopes,
                run_id=request.run_id,
                limit=self.max_matches * (4 if any(self.params.neighbours) else 1)
                if request.order == 'relevance'
                else None,
                similarity=similarity,
                weight=self.hybrid_weight,
                count=count_matches,
            )
            while True:
                ranked = await ranker.rank(ask)
                if ask.limit is None or len(ranked.candidates) < ask.limit:
                    break
                window = await ranker.windows(self.context_lines, ranked.candidates)
                if len(self._distinct(ranked.candidates, window)) >= self.max_matches:
                    break
                ask = replace(ask, limit=ask.limit * 4)
            fixed: str | None = None
            if request.run_id is not None and (not ranked.known_run or ranked.total == 0):
                fixed = _answer.no_run(request.run_id)
            elif ranked.total == 0:
                fixed = _answer.empty_conversation() if scope == 'conversation' else _answer.empty_store()
            elif not terms:
                fixed = _answer.no_terms(query)
            elif not ranked.candidates:
                fixed = _answer.no_matches(query, ranked.total)
            matched = ranked.matched if count_matches else None
            if fixed is not None:
                return Outcome(fixed=fixed, unreadable=_unreadable(ranker), notes=notes, matched=matched)
            candidates = ranked.candidates
            if request.order != 'relevance':
                times = dict(zip(map(id, candidates), ranker.times(candidates), strict=True))
                candidates = sorted(candidates, key=lambda found: times[id(found)], reverse=request.order == 'newest')
            outcome = Outcome(
                query=query, total=ranked.total, terms=terms, rarity=ranked.rarity, notes=notes, matched=matched
            )
            window = await ranker.windows(self.context_lines, candidates)
            chosen = self._distinct(candidates, window)
            windows = [window(found) for found in chosen]
            outcome = await self._shown(ranker, outcome, chosen, windows, conversation=all_scopes, keep=keep)
            return replace(outcome, unreadable=_unreadable(ranker), notes=notes)

    async def _shown(
        self,
        ranker: Ranker,
        outcome: Outcome,
        chosen: list[Candidate],
        windows: list[tuple[Doc, ...]],
        *,
        conversation: bool,
        keep: Callable[[Hit], bool] | None = None,
    ) -> Outcome:
        """The outcome with the chosen hits' windows read and composed into the blocks that fit.

        Which messages each block shows is chosen within the budget (`_compose`): each hit with
        its partner first, then wider while room remains. Windows are read in one batch.
        """
        # The note naming unreadable runs is not known yet (loading may add to it): leave it room.
        notes = [_answer.unreadable(problem) for problem in ranker.unreadable]
        note = _answer.note_for(notes, self.max_result_bytes) + ''.join(f'\n\n{text}' for text in outcome.notes)
        max_bytes = self.max_result_bytes - len(note.encode())
        loaded = await ranker.load(chosen, windows)
        count = len(loaded)  # less runs deleted since they were ranked
        loaded = [hit for hit in loaded if not withheld_only(hit, outcome.terms, self.skip_tools)]
        if keep is not None:
            loaded = [hit for hit in loaded if keep(hit)]
        if not loaded:
            return replace(outcome, fixed=_answer.no_matches(outcome.query, outcome.total))
        blocks, shown, count = render(
            loaded,
            terms=outcome.terms,
            rarity=outcome.rarity,
            skip_tools=self.skip_tools,
            budget=_answer.blocks_budget(outcome.query, outcome.total, count, max_bytes, outcome.matched),
            conversation=conversation,
        )
        return replace(outcome, hits=shown, blocks=blocks, count=count)

    def _distinct(self, candidates: list[Candidate], window: Callable[[Candidate], tuple[Doc, ...]]) -> list[Candidate]:
        """The first `max_matches` candidates whose own message is not an earlier one's or its neighbour's.

        Not the whole window: a window is only shown as far as the budget allows (`_compose`), so a
        strong match five messages from a better one would be neither a block nor, at a small
        budget, in view. A neighbour (where the better one's partner is) is shown with it first.
        Blocks that widen into each other merge.
        """
        shown: set[Doc] = set()
        chosen: list[Candidate] = []
        for found in candidates:
            if len(chosen) >= self.max_matches:
                break
            if (found.run_key, found.position) in shown:
                continue
            chosen.append(found)
            docs = window(found)
            at = docs.index((found.run_key, found.position))
            shown.update(docs[max(at - 1, 0) : at + 2])
        return chosen


def _unreadable(ranker: Ranker) -> list[str]:
    """The answer's notes naming what the search could not read."""
    return [_answer.unreadable(problem) for problem in ranker.unreadable]


def search_failed(error: Exception) -> str:
    """The answer when the store failed inside a search: the error's class only (see `SearchEngine.search`)."""
    return (
        f'The search failed: the conversation history store raised {type(error).__name__}, so nothing was '
        'searched. Answer without it, or try again later.'
    )
