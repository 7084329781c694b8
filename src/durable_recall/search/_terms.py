"""The postings of a search's words: read once per scope generation, decoded, and kept between searches.

A common word's postings decode into numpy columns (`index.Columns`), which score with array
arithmetic; but importing numpy takes 0.1 to 0.3 s, more than a one-off search of such a word
costs in Python. So a process's first search decodes them as Python chunks (a command line, or a
worker's cold start, never waits for the import) and does not keep them; the process's later
searches read them again into columns, importing numpy once. A process that already imported
numpy uses columns from its first search.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from ..index import IndexStorage, Postings, PostingsRow, common_term, term_postings

__all__ = ('keep_postings', 'read_postings')


def keep_postings(
    found: Mapping[str, Sequence[PostingsRow]],
    terms: Sequence[str],
    cache: OrderedDict[str, Postings],
    passing: dict[str, Postings],
    *,
    first_search: bool,
) -> None:
    """Decode the postings read of `terms` (one not in `found` has none) into `cache` or `passing` (`read_postings`)."""
    columns = not first_search or 'numpy' in sys.modules
    for term in terms:
        rows = found.get(term, ())
        decoded: Postings = [term_postings(rows, columns=columns)] if rows else []
        (cache if columns or not common_term(rows) else passing)[term] = decoded


async def read_postings(
    storage: IndexStorage,
    cache: OrderedDict[str, Postings],
    generation: str,
    terms: Sequence[str],
    conversation_id: str | None,
    *,
    all_scopes: bool,
    first_search: bool,
    max_terms: int,
    passing: dict[str, Postings],
) -> dict[str, Postings] | None:
    """Each term's postings in the scope, from `cache` or one read (then kept there, at most `max_terms`).

    Args:
        storage: The index read.
        cache: Decoded postings kept between searches (of this scope generation).
        generation: The generation the caller's statistics are of.
        terms: The query's terms.
        conversation_id: The scope's conversation.
        all_scopes: Whether the scope is the whole store.
        first_search: Whether this is the process's first search (see the module's docstring).
        max_terms: The most terms `cache` keeps.
        passing: The postings this search decoded but `cache` does not keep (a first search's
            common words): a search that ranks again with a wider limit finds them here. The
            caller empties it when a search begins.

    Returns:
        The postings by term, or `None` when the scope's index moved past `generation` while they
        were read (the caller starts over with the new statistics).
    """
    missing = [term for term in dict.fromkeys(terms) if term not in cache and term not in passing]
    if missing:
        found = await storage.postings(missing, conversation_id, all_scopes=all_scopes)
        # Postings and statistics must come from one generation: if a run was indexed since the
        # statistics were read, start over with the new ones.
        status = await storage.status(conversation_id, all_scopes=all_scopes)
        if status.generation != generation:
            return None
        keep_postings(found, missing, cache, passing, first_search=first_search)
    out = {term: passing[term] if term in passing else cache[term] for term in terms}
    for term in terms:
        if term in cache:
            cache.move_to_end(term)
    while len(cache) > max_terms:
        cache.popitem(last=False)
    return out
