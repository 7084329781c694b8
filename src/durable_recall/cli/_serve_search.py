"""Search for `mcp` and `ui`: the tool's engine, ranking options and answer, inside the server's scope.

The answer comes from the same `SearchEngine` that `search_conversation_history` and `durable-recall
search` run, over a `SnapshotHistorySource` of the store. The scope decides the engine's scope:
a server for one conversation searches as a run of that conversation would (`scope='conversation'`);
one for several takes the conversation to search from the caller, checked against the scope first;
only `--all` searches the whole store. A run id out of scope gets the answer a run id that does not
exist gets. Every problem with the caller's input is an answer string, never an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..index import Bm25Params
from ..search import Outcome, SearchEngine, SearchRequest, SearchScope, SnapshotHistorySource
from ..stores import StepStore
from ..text import DEFAULT_SKIP_TOOLS, iter_tokens
from ._output import human_time
from ._serve_scope import ServeScope, run_in_scope

__all__ = ('MAX_BYTES', 'Query', 'Searcher', 'highlight', 'not_in_scope')

MAX_BYTES = 16_000
"""The answer's byte budget, the CLI's and the tool's default."""


def not_in_scope(what: str, ident: str) -> str:
    """The one answer for an id that does not exist and an id out of scope alike."""
    return f'No {what} {ident!r} is available on this server.'


@dataclass(frozen=True)
class Query:
    """A search as a client asks for it; every field as the tool takes it."""

    query: str
    conversation_id: str | None = None
    run_id: str | None = None
    roles: Sequence[str] | None = None
    since: str | None = None
    until: str | None = None
    order: str = 'relevance'
    ranking: str = 'bm25'
    hybrid_weight: float | None = None
    max_matches: int = 10
    context_lines: int = 5


class Searcher:
    """One engine per ranking setup, kept for the server's life (their caches are what makes a search quick)."""

    def __init__(self, store: StepStore, scope: ServeScope) -> None:
        self._store = store
        self._scope = scope
        self._source = SnapshotHistorySource(store)
        self._engines: dict[tuple[Any, ...], SearchEngine] = {}

    async def search(self, query: Query) -> tuple[str, Outcome | None]:
        """The tool's answer, and the ranked outcome behind it (`None` when the answer is a refusal)."""
        where = await self._where(query)
        if isinstance(where, str):
            return where, None
        scope, conversation_id = where
        engine = self._engine(query)
        if isinstance(engine, str):
            return engine, None
        request = SearchRequest(
            query=query.query,
            run_id=query.run_id or None,
            roles=list(query.roles) if query.roles else None,  # checked by the engine
            since=query.since or None,
            until=query.until or None,
            order=query.order,  # checked by the engine
        )
        outcome = await engine.rank(request, scope=scope, conversation_id=conversation_id)
        return outcome.answer(MAX_BYTES), outcome

    async def _where(self, query: Query) -> tuple[SearchScope, str | None] | str:
        scope = self._scope
        conversation_id = query.conversation_id or None
        if conversation_id is None:
            conversation_id = scope.only()
        if conversation_id is not None and not scope.allows(conversation_id):
            return not_in_scope('conversation', conversation_id)
        if conversation_id is None and not scope.everything:
            names = ', '.join(sorted(scope.conversations or ()))
            return f'Name the conversation to search: this server serves {names}.'
        if query.run_id:
            run = await run_in_scope(self._store, scope, query.run_id)
            if run is None or (conversation_id is not None and run.conversation_id != conversation_id):
                return not_in_scope('run', query.run_id)
        return ('all', None) if conversation_id is None else ('conversation', conversation_id)

    def _engine(self, query: Query) -> SearchEngine | str:
        if query.ranking not in ('bm25', 'hybrid'):
            return f"Invalid ranking {query.ranking!r}: use 'bm25' or 'hybrid'."
        key = (query.ranking, query.hybrid_weight, query.max_matches, query.context_lines)
        engine = self._engines.get(key)
        if engine is not None:
            return engine
        options: dict[str, Any] = {}
        if query.ranking == 'hybrid':
            options['ranking'] = 'hybrid'
            if query.hybrid_weight is not None:
                options['hybrid_weight'] = query.hybrid_weight
        try:
            engine = SearchEngine(
                source=self._source,
                params=Bm25Params(),
                max_matches=query.max_matches,
                context_lines=query.context_lines,
                max_result_bytes=MAX_BYTES,
                skip_tools=DEFAULT_SKIP_TOOLS,
                **options,
            )
        except ImportError as error:
            return (
                f'Hybrid ranking needs the semantic extra ({error.name or error} is not installed on the server): '
                "search with ranking='bm25'."
            )
        except Exception as error:  # a weight or count the engine refuses: an answer, not an exception
            return f'Invalid search options: {error}'
        self._engines[key] = engine
        return engine


def highlight(text: str, terms: Sequence[str]) -> list[tuple[str, bool]]:
    """`text` cut into pieces, each marked whether it is a word the query matched (by its analysed term)."""
    wanted = set(terms)
    pieces: list[tuple[str, bool]] = []
    at = 0
    for token in iter_tokens(text):
        if token.term in wanted:
            if token.start > at:
                pieces.append((text[at : token.start], False))
            pieces.append((text[token.start : token.end], True))
            at = token.end
    if at < len(text):
        pieces.append((text[at:], False))
    return pieces


def time_text(moment: datetime | None) -> str:
    """A time as the pages and answers show it: UTC, to the second."""
    return '-' if moment is None else f'{human_time(moment)} UTC'
