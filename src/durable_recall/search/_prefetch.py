"""A search's first read: the scope's status with the postings and spans it will rank and window by, at once.

On a networked store each read is a round trip, and a round trip under load costs more than the
read. Where the corpus can (`ViewingCorpus`, over a `ScopeViews` index), a search's status read
also brings the postings of the query's terms that the ranker does not hold for the generation
it knows (all of them, when the generation moved), and the conversation's spans when windows will
walk the record and the ranker does not hold them. One statement sees one snapshot, so the
postings are exactly of the status's generation: no second status read to check it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence

from ..base import CorruptRunError, RunRecord
from ..index import IndexedRunRow, Postings, Progress, ScopeView, SpansWanted, Unreadable
from ._corpus import Corpus, ViewingCorpus
from ._damage import DAMAGE
from ._scope_cache import CachedScope
from ._terms import keep_postings
from ._windows import Layout

__all__ = ('Prefetch', 'caught_up_view', 'prefetch', 'read_rows')


class Prefetch:
    """What one view read brought, and which of it to keep."""

    def __init__(self, view: ScopeView, missing: Sequence[str], held: Sequence[str]) -> None:
        self.view = view
        self._terms = [*missing, *held] if view.moved else list(missing)

    def keep(self, scope: CachedScope, passing: dict[str, Postings], *, first_search: bool) -> None:
        """Decode the postings read into the scope's cache (or `passing`), and lay out its spans."""
        for term in self._terms:
            # A term whose postings do not decode is not kept: ranking reads it again, and names the damage.
            with contextlib.suppress(*DAMAGE):
                keep_postings(self.view.postings, [term], scope.terms, passing, first_search=first_search)
        if self.view.spans is not None and scope.layout is None:
            with contextlib.suppress(*DAMAGE):  # `Ranker.windows` reads them again, and names the damage
                scope.layout = Layout(self.view.spans)


async def prefetch(
    corpus: Corpus,
    cached: CachedScope | None,
    conversation_id: str | None,
    *,
    all_scopes: bool,
    terms: Sequence[str],
    across: bool,
) -> Prefetch | None:
    """The scope's view, read in one statement; `None` where the corpus cannot read one.

    Args:
        corpus: The corpus searched.
        cached: What the ranker holds of the scope (of some generation), if anything.
        conversation_id: The scope's conversation.
        all_scopes: The whole store.
        terms: The query's terms.
        across: Whether windows will walk the conversation's record (and so need its spans).
    """
    if not isinstance(corpus, ViewingCorpus):
        return None
    asked = list(dict.fromkeys(terms))
    held = [] if cached is None else [term for term in asked if term in cached.terms]
    missing = [term for term in asked if term not in held]
    spans: SpansWanted = 'no'
    if across and not all_scopes:
        spans = 'yes' if cached is None or cached.layout is None else 'if-moved'
    view = await corpus.view(
        conversation_id,
        all_scopes=all_scopes,
        terms=missing,
        known=None if cached is None else cached.generation,
        known_terms=held,
        spans=spans,
    )
    return None if view is None else Prefetch(view, missing, held)


async def caught_up_view(
    corpus: Corpus,
    cached: CachedScope | None,
    conversation_id: str | None,
    *,
    all_scopes: bool,
    terms: Sequence[str],
    across: bool,
    progress: Progress | None,
) -> tuple[Prefetch | None, list[Unreadable]]:
    """`prefetch`, with the runs it finds pending caught up first (then read again); and what did not read.

    Writers normally index what they save (`StepPersistence`), so a search finds little pending.
    """
    found = await prefetch(corpus, cached, conversation_id, all_scopes=all_scopes, terms=terms, across=across)
    if found is None or not found.view.status.pending or not isinstance(corpus, ViewingCorpus):
        return found, []
    # Caught up, the generation moves: what the view read is of the one before.
    problems = await corpus.catch_up(found.view.status.pending, progress)
    found = await prefetch(corpus, cached, conversation_id, all_scopes=all_scopes, terms=terms, across=across)
    return found, problems


async def read_rows(corpus: Corpus, run_keys: list[int]) -> tuple[Mapping[int, IndexedRunRow], Mapping[str, RunRecord]]:
    """Index rows by key, with their records where the corpus reads both in one round trip (else no records)."""
    if isinstance(corpus, ViewingCorpus):
        try:
            both = await corpus.rows_with_records(run_keys)
        except CorruptRunError:
            both = None  # the records are read apart, and the one that does not read is named
        if both is not None:
            return both
    return await corpus.storage.runs_by_key(run_keys), {}
