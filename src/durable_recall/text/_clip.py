"""Clip a long text for display to a window around the query term that matters most in it.

The index always holds full text; only what the model is shown gets clipped, so a long tool
return costs a few hundred characters of context, not all of it. The window centres on the
*rarest* query term the text contains, by the idf the caller passes: for the query `the ZEBRA`
on a long message that starts with "the", the excerpt shows ZEBRA, not the opening words.

Finding the focus is bounded and linear, whatever the query: it looks at the first `SCAN_CHARS`
characters of a part (a term only past them leaves the excerpt at the head; the index still finds
the message). An ASCII text is scanned once by one compiled pattern (a trie of the terms, so each
position costs at most the longest term, never the number of terms), resumed after each term's
first occurrence. A non-ASCII text is walked token by token (the tokenizer's normalisation is
exact, but costs microseconds per character) for its first `WALK_CHARS` characters only; past
them, the same one-pass pattern runs over its case-folded text when folding kept its length (so
offsets still line up). A part of megabytes costs a few milliseconds to clip.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from functools import lru_cache

from ._tokenize import CJK, UNSPACED, Token, iter_tokens

__all__ = ('ELLIPSIS', 'SCAN_CHARS', 'WALK_CHARS', 'clip')

ELLIPSIS = '...'
"""Marks a cut at either end of a clipped excerpt."""

SCAN_CHARS = 65_536
"""How much of a part the focus is looked for in (a few ms at worst on one core)."""

WALK_CHARS = 2048
"""How much of a non-ASCII text the exact token walk reads (a few ms at worst: CJK bigrams)."""


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
    """The first occurrence of the rarest query term present in `text`, if any is (see the module docstring)."""
    if not terms:
        return None
    text = text[:SCAN_CHARS]
    if text.isascii():
        return _ascii_focus(text, terms, rarity)
    found: dict[str, Token] = {}
    walked = text[:WALK_CHARS]
    for token in iter_tokens(walked):
        if token.end >= len(walked) and len(text) > len(walked):
            break  # the token may go on past the walk: the scan below finds it whole
        if token.term in terms and token.term not in found:
            found[token.term] = token
            if rarity is None:
                break
    if len(text) > WALK_CHARS and not (rarity is None and found):
        folded = text.casefold()
        if len(folded) == len(text):
            rest = [term for term in terms if term not in found]
            start = max(len(walked) - max(map(len, rest), default=0), 0)
            for token in _scan(folded, rest, start, first_only=rarity is None):
                found.setdefault(token.term, token)
    return _best(found.values(), rarity)


def _ascii_focus(text: str, terms: Collection[str], rarity: Mapping[str, float] | None) -> Token | None:
    """`_focus` for ASCII text, at C speed: each term's first whole-word occurrence, in one pass.

    ASCII text tokenizes to runs of `[A-Za-z0-9_]` lower-cased, so a term occurs exactly where a
    lower-cased match of it has no word character on either side. The choice is the same as
    the token walk's: the highest rarity, ties to the earliest occurrence.
    """
    ascii_terms = [term for term in terms if term.isascii()]  # NFKC and casefolding keep ASCII ASCII
    return _best(_scan(text.lower(), ascii_terms, 0, first_only=rarity is None), rarity)


def _best(found: Iterable[Token], rarity: Mapping[str, float] | None) -> Token | None:
    """The token of the highest rarity, ties (and every token, without `rarity`) to the earliest."""
    best: Token | None = None
    best_rarity = 0.0
    for token in found:
        term_rarity = rarity.get(token.term, 0.0) if rarity is not None else 0.0
        if best is None or term_rarity > best_rarity or (term_rarity == best_rarity and token.start < best.start):
            best, best_rarity = token, term_rarity
    return best


def _scan(folded: str, terms: Collection[str], start: int, *, first_only: bool) -> list[Token]:
    """Each term's first whole-word occurrence in `folded` from `start`, by one compiled pattern.

    Each search resumes just after the occurrence found before it, with the terms found dropped
    from the pattern, so the scan is one pass over the text, and at most one search per term.
    """
    left = frozenset(term for term in terms if term)
    found: list[Token] = []
    position = start
    while left:
        match = _pattern(left).search(folded, position)
        if match is None:
            break
        term = match.group()
        found.append(Token(term, match.start(), match.end()))
        if first_only:
            break
        left = left - {term}
        position = match.start() + 1
    return found


@lru_cache(maxsize=256)
def _pattern(terms: frozenset[str]) -> re.Pattern[str]:
    """One regex matching any of `terms` as a whole word: a trie, so a position costs at most the longest term.

    A term must not touch a word character on either side, but for one of a script written
    without spaces (a CJK bigram, whose neighbours are letters of the same run), which matches anywhere.
    """
    words = [term for term in terms if not _UNSPACED_CHAR.search(term)]
    others = [term for term in terms if _UNSPACED_CHAR.search(term)]
    branches: list[str] = []
    if words:
        branches.append(f'(?<!\\w)(?:{_trie(words)})(?!\\w)')
    if others:
        branches.append(_trie(others))
    return re.compile('|'.join(branches) or '(?!)')


def _trie(terms: Collection[str]) -> str:
    """A regex matching exactly `terms` (distinct, non-empty), common prefixes factored out.

    Nested only where terms branch (at most once per term, so 64 deep at most), never per character.
    """
    groups: dict[str, list[str]] = {}
    for term in terms:
        groups.setdefault(term[0], []).append(term)
    branches: list[str] = []
    for first in sorted(groups):
        group = groups[first]
        prefix = _common_prefix(group)
        rests = [term[len(prefix) :] for term in group]
        longer = [rest for rest in rests if rest]
        tail = _trie(longer) if longer else ''
        if longer and len(longer) < len(rests):
            tail = f'(?:{tail})?'  # the prefix is a term itself
        branches.append(re.escape(prefix) + tail)
    return branches[0] if len(branches) == 1 else '(?:' + '|'.join(branches) + ')'


def _common_prefix(terms: list[str]) -> str:
    first, last = min(terms), max(terms)
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]


_UNSPACED_CHAR = re.compile(f'[{CJK}{UNSPACED}]')
