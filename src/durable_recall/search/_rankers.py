"""Which ranker, and which lock, a search uses: one per conversation where the corpus allows it.

A `Ranker` keeps per-search state (the scope being ranked, its windows, what did not read), so a
ranker serves one search at a time. One ranker per engine made every search of a worker wait for
the one before it, whatever its conversation: a worker running thirty conversations ran their
searches one by one, each waiting out the others' round trips to the store. Over a store's own
index (`StoreCorpus`, whose reads and catch-ups keep no state of their own between calls, and
whose concurrent catch-ups of one run are made safe by the store) each conversation gets its own
ranker and lock, so searches of different conversations overlap. Any other corpus (an in-memory
index, a conversation store's, hybrid ranking's vectors) keeps one ranker and one lock.
"""

from __future__ import annotations

from collections import OrderedDict

import anyio

from ._corpus import Corpus, StoreCorpus
from ._ranking import Ranker
from ._shown_cache import ShownCache

__all__ = ('Rankers',)

_MAX_RANKERS = 64
"""Conversations whose rankers (and what they cache) a process keeps; the least recently used goes."""

_ALL = object()


class Rankers:
    """The rankers of one engine (see the module docstring)."""

    def __init__(
        self, corpus: Corpus, *, context_lines: int, per_conversation: bool, cache: ShownCache | None = None
    ) -> None:
        self.corpus = corpus
        self._context = context_lines
        self._each = per_conversation and isinstance(corpus, StoreCorpus)
        self.cache = ShownCache() if cache is None else cache
        """The messages recent answers showed, for every ranker here (see `_shown_cache`)."""
        self._shared = (Ranker(corpus, context_lines=context_lines, cache=self.cache), anyio.Lock())
        self._rankers: OrderedDict[object, tuple[Ranker, anyio.Lock]] = OrderedDict()

    def of(self, conversation_id: str | None, *, all_scopes: bool) -> tuple[Ranker, anyio.Lock]:
        """The ranker for a search of this scope, and the lock to hold while it searches."""
        if not self._each or all_scopes:
            return self._shared
        key = _ALL if conversation_id is None else conversation_id
        found = self._rankers.get(key)
        if found is None:
            # Smaller caches than the shared ranker's: each holds one conversation's words; the
            # messages shown are kept in the cache all of them share, bounded as a whole.
            ranker = Ranker(
                self.corpus,
                context_lines=self._context,
                max_cached_terms=512,
                max_cached_scopes=1,
                cache=self.cache,
                max_read_ahead=256,
            )
            found = self._rankers[key] = (ranker, anyio.Lock())
        self._rankers.move_to_end(key)
        while len(self._rankers) > _MAX_RANKERS:
            self._rankers.popitem(last=False)  # one in use finishes its search: it holds its own reference
        return found
