"""The text a cleared tool result is replaced with: what it was, and the one search call that brings it back.

The search tool ranks each query word by BM25, so the query the placeholder names is made of the
result's own most distinctive words: the ones that occur in the fewest other messages of the
history (identifiers and numbers first, then longer words), at most `QUERY_WORDS` of them. The
result holding all of them then ranks first. The choice reads only the history, so it is the same
on every replay.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .._vocabulary import SEARCH_TOOL_NAME
from ..text import TEXT_LIMIT, tokenize

__all__ = ('CLEARED_RESULT_KEY', 'QUERY_WORDS', 'placeholder', 'query_words')

CLEARED_RESULT_KEY = 'durable_recall.cleared.v1'
"""Metadata key a cleared `ToolReturnPart` carries; its value is `{'chars': <original length>, 'query': ...}`.

Compatibility data: `ToolResultClearing` recognises results it already cleared by it.
"""

QUERY_WORDS = 6
"""How many words the placeholder's query holds."""


def query_words(content: str, others: Sequence[Collection[str]]) -> list[str]:
    """The search terms of `content` that best single it out among `others` (the other messages' terms).

    Terms are the search index's own (`tokenize`), so the query matches exactly what was indexed.
    Ranked by how many of `others` hold the term (fewest first), then terms with a digit or `_`
    (identifiers, values) before plain words, then longer first; given in their order in `content`.
    """
    first: dict[str, int] = {}
    for position, term in enumerate(tokenize(content)):
        if len(term) >= 3:
            first.setdefault(term, position)

    def rank(term: str) -> tuple[int, int, int, int]:
        spread = sum(term in terms for terms in others)
        identifier = any(char.isdigit() or char == '_' for char in term)
        return (spread, 0 if identifier else 1, -len(term), first[term])

    best = sorted(first, key=rank)[:QUERY_WORDS]
    return sorted(best, key=first.__getitem__)


def placeholder(tool_name: str, chars: int, query: str) -> str:
    """What the model reads instead of a cleared result."""
    where = (
        'the answer shows it verbatim'
        if chars <= TEXT_LIMIT
        else f'the answer shows {TEXT_LIMIT} characters of it around the words that match, so search for what you need'
    )
    return (
        f'[The result of `{tool_name}` ({chars} characters) was cleared from the context to save space. '
        f'It is persisted: call `{SEARCH_TOOL_NAME}` with query "{query}" to read it back; {where}.]'
    )
