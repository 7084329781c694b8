"""Clip a long text for display to a window around the query term that matters most in it.

The index always holds full text; only what the model is shown gets clipped, so a long tool
return costs a few hundred characters of context, not all of it. The window centres on the
*rarest* query term the text contains, by the idf the caller passes: for the query `the ZEBRA`
on a long message that starts with "the", the excerpt shows ZEBRA, not the opening words.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from ._tokenize import Token, iter_tokens

__all__ = ('ELLIPSIS', 'clip')

ELLIPSIS = '...'
"""Marks a cut at either end of a clipped excerpt."""


def clip(text: str, limit: int, terms: Collection[str], rarity: Mapping[str, float] | None = None) -> str:
    """`text` cut to `limit` characters around its best query term, with `...` where it was cut.

    Args:
        text: The full text of one part.
        limit: How many characters of `text` to keep. The result is at most `limit + 6`
            characters long: the kept text plus an ellipsis at each end.
        terms: The query's terms (from `tokenize`). Matching uses the same tokenizer, so it is
            normalisation-aware: the term `strasse` finds `Straße`.
        rarity: Each term's idf. The focus is the present term with the highest value; when
            several tie (or `rarity` is `None`), the first of them in the text.

    Returns:
        `text` unchanged when it fits. Otherwise the head, when no term is present or the focus
        already ends within it; else a window that starts `limit // 2` characters before the
        focus (so the focus sits mid-window), shifted to keep a long focus whole and to end no
        later than the text does. No leading ellipsis at the very start, none trailing at the end.

    Raises:
        ValueError: `limit` is below 1.
    """
    if limit < 1:
        raise ValueError(f'limit must be at least 1, got {limit!r}')
    if len(text) <= limit:
        return text
    focus = _focus(text, terms, rarity)
    if focus is None or focus.end <= limit:
        return text[:limit] + ELLIPSIS
    start = min(max(focus.start - limit // 2, focus.end - limit), len(text) - limit)
    end = start + limit
    return (ELLIPSIS if start > 0 else '') + text[start:end] + (ELLIPSIS if end < len(text) else '')


def _focus(text: str, terms: Collection[str], rarity: Mapping[str, float] | None) -> Token | None:
    """The first occurrence of the rarest query term present in `text`, if any is."""
    if not terms:
        return None
    if text.isascii():
        return _ascii_focus(text, terms, rarity)
    best: Token | None = None
    best_rarity = 0.0
    for token in iter_tokens(text):
        if token.term not in terms:
            continue
        if rarity is None:
            return token
        token_rarity = rarity.get(token.term, 0.0)
        if best is None or token_rarity > best_rarity:
            best, best_rarity = token, token_rarity
    return best


def _ascii_focus(text: str, terms: Collection[str], rarity: Mapping[str, float] | None) -> Token | None:
    """`_focus` for ASCII text, at C speed: each term's first whole-word occurrence, by `str.find`.

    ASCII text tokenizes to runs of `[A-Za-z0-9_]` lower-cased, so a term occurs exactly where a
    lower-cased match of it has no word character on either side. The choice is the same as
    the token walk's: the highest rarity, ties to the earliest occurrence.
    """
    lowered = text.lower()
    best: Token | None = None
    best_rarity = 0.0
    for term in terms:
        if not term.isascii():
            continue  # NFKC and casefolding keep ASCII ASCII: a non-ASCII term cannot occur here
        start = _whole_word(lowered, term)
        if start < 0:
            continue
        term_rarity = rarity.get(term, 0.0) if rarity is not None else 0.0
        if best is None or term_rarity > best_rarity or (term_rarity == best_rarity and start < best.start):
            best, best_rarity = Token(term, start, start + len(term)), term_rarity
    return best


def _whole_word(lowered: str, term: str) -> int:
    """Where `term` first occurs in `lowered` with no word character on either side, or -1."""
    start = lowered.find(term)
    while start >= 0:
        end = start + len(term)
        if (start == 0 or lowered[start - 1] not in _WORD) and (end == len(lowered) or lowered[end] not in _WORD):
            return start
        start = lowered.find(term, start + 1)
    return -1


_WORD = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_')
