"""The tokenizer: the one definition of a search term, shared by documents, queries and clipping.

A term is what a word of the text becomes after Unicode NFKC normalisation and casefolding, so
`STRASSE` finds `straße`, a full-width `ＡＢＣ` finds `abc`, `İstanbul` finds `istanbul`, and an
accent typed as a combining mark finds the precomposed letter; then the analyzer (`_analyzer`)
folds accents on Latin letters (`école` is `ecole`) and stems Latin-script words (`visited` is
`visit`), leaving words with digits or underscores exact.

Words are runs of letters, digits, underscores and combining marks: `snake_case` is one term,
`file.py` is two. Scripts written without spaces between words get overlapping character bigrams
instead, so a word inside a run still matches: `東京タワーに行った` holds the term `東京`. That covers
Chinese, Japanese and Korean (where particles attach to nouns), and Thai, Lao, Khmer and Myanmar.
For those four it is an approximation: no dictionary segmentation, so a bigram can straddle two
words. A run of one character is kept as that character. Latin letters or digits inside such a run
split off at the script boundary (`Python3の使い方` gives `python3`, then bigrams).

Every token carries its span in the *original* text, so the clipper can centre an excerpt on it
even when normalisation changed the text's length (`ﬁle` is the term `file` spanning 3 characters).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import NamedTuple

from ._analyzer import analyze_word, cached_term, on_change

__all__ = ('CJK', 'UNSPACED', 'Token', 'iter_tokens', 'tokenize')


class Token(NamedTuple):
    """One term and the span `[start, end)` of the original text it came from."""

    term: str
    start: int
    end: int


CJK = (
    '\u1100-\u11ff'  # Hangul Jamo
    '\u3005-\u3007'  # iteration mark, closing mark, ideographic zero
    '\u3021-\u3029'  # Hangzhou numerals
    '\u3031-\u3035'  # kana repeat marks
    '\u303b-\u303c'  # vertical ideographic iteration mark, masu mark
    '\u3041-\u3096'  # Hiragana
    '\u3099-\u309f'  # kana voicing marks, iteration marks, yori
    '\u30a1-\u30fa'  # Katakana (the middle dot U+30FB separates words, so it is not here)
    '\u30fc-\u30ff'  # prolonged sound mark, iteration marks, koto
    '\u3130-\u318f'  # Hangul compatibility jamo
    '\u31f0-\u31ff'  # Katakana phonetic extensions
    '\u3400-\u4dbf'  # CJK extension A
    '\u4e00-\u9fff'  # CJK unified ideographs
    '\ua960-\ua97f'  # Hangul jamo extended A
    '\uac00-\ud7ff'  # Hangul syllables, jamo extended B
    '\uf900-\ufaff'  # CJK compatibility ideographs
    '\U00020000-\U0003ffff'  # supplementary and tertiary ideographic planes
)
"""Scripts split into bigrams. Applied after NFKC, so half-width katakana has become full-width."""

UNSPACED = (
    '\u0e00-\u0e7f'  # Thai
    '\u0e80-\u0eff'  # Lao
    '\u1000-\u109f'  # Myanmar
    '\u1780-\u17ff'  # Khmer
)
"""Southeast Asian scripts written without spaces between words; bigrams, approximately."""

_IGNORABLE = '\u00ad\u200c\u200d\u2060\ufe00-\ufe0f\U000e0100-\U000e01ef'
"""Soft hyphen, zero-width (non-)joiners, word joiner, variation selectors: invisible, dropped.

They sit inside words without separating them (a soft hyphen marking where `hyphen` may break),
so a run keeps going through them and the term leaves them out. The zero-width *space* is not here: Thai and
Khmer text uses it as a word boundary.
"""

_IGNORABLE_RE = re.compile(f'[{_IGNORABLE}]')
_ASCII_WORD = re.compile(r'\w+', re.ASCII)
_CONTINUES_CLUSTER = re.compile(r'[\u1160-\u11ff\ud7b0-\ud7ff\uff9e\uff9f]')
"""Characters NFKC composes with the one before although they are not combining marks:
Hangul medial and final jamo, and the half-width voicing marks (`ｶﾞ` becomes `ガ`)."""


@cache
def _mark_class() -> str:
    """A regex class body of every combining mark (categories Mn, Mc, Me) this Python knows.

    `re` has no class for Unicode category M, and without marks a word of Hindi (`हिन्दी`), or of
    Arabic with vowel signs, breaks at every vowel sign. Computed on first use rather than at
    import (about 30 ms). Every mark is in planes 0, 1 and 14; a test checks that against a scan
    of all of Unicode.
    """
    ranges: list[tuple[int, int]] = []
    for block in (range(0x20000), range(0xE0000, 0xE1000)):
        for code in block:
            if unicodedata.category(chr(code))[0] == 'M':
                if ranges and ranges[-1][1] == code - 1:
                    ranges[-1] = (ranges[-1][0], code)
                else:
                    ranges.append((code, code))
    return ''.join(f'\\U{first:08x}-\\U{last:08x}' for first, last in ranges)


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The compiled patterns: runs in the original text, marks, and terms in a normalised run."""
    marks = _mark_class()
    runs = re.compile(f'[\\w{marks}{_IGNORABLE}]+')
    mark = re.compile(f'[{marks}]')
    not_word = f'(?![{CJK}{UNSPACED}])'
    terms = re.compile(
        f'(?P<bigram>[{CJK}]+|[{UNSPACED}]+)|(?P<word>{not_word}\\w(?:{not_word}[\\w{marks}])*)',
    )
    return runs, mark, terms


def tokenize(text: str) -> list[str]:
    """The terms of `text`, in order, with repeats: what a document is indexed by and a query asks for."""
    if text.isascii():
        # The common case: ASCII has nothing to normalise and no unspaced script.
        # The cache lookup first: most words were analysed before, and a call costs more (terms are never empty).
        return [cached_term(word) or analyze_word(word) for word in _ASCII_WORD.findall(text.lower())]
    runs, _, _ = _patterns()
    terms: list[str] = []
    for run in runs.findall(text):
        if run.isascii():
            terms.append(analyze_word(run.lower()))
        else:
            terms.extend(term for term, _, _ in _run_terms(run))
    return terms


def iter_tokens(text: str) -> Iterator[Token]:
    """The tokens of `text` in order, each with its span in `text` itself (not in a normalised copy)."""
    runs, _, _ = _patterns()
    for match in runs.finditer(text):
        run = match.group()
        base = match.start()
        if run.isascii():
            # Letters, digits and underscores only: one word, and lower-casing is the whole fold.
            yield Token(analyze_word(run.lower()), base, match.end())
        else:
            for term, start, end in _run_terms(run):
                yield Token(term, base + start, base + end)


@lru_cache(maxsize=4096)
def _run_terms(run: str) -> tuple[tuple[str, int, int], ...]:
    """Terms of one non-ASCII run with their spans in it.

    Cached: words recur, and normalising one costs a few microseconds where an ASCII word costs
    nothing.
    """
    return tuple(_normalised_run_terms(run))


on_change(_run_terms.cache_clear)


def _normalised_run_terms(run: str) -> Iterator[tuple[str, int, int]]:
    """Normalise a run, keeping where each character came from, and split it into terms."""
    folded = run.casefold()
    if (
        len(folded) == len(run)
        and unicodedata.is_normalized('NFKC', run)
        and '\u0307' not in folded
        and not _IGNORABLE_RE.search(run)
    ):
        # Already normalised, and casefolding mapped each character to exactly one: the folded
        # text lines up with the original character for character.
        yield from _terms(folded)
        return
    normalised, starts, ends = _normalise(run)
    for term, start, end in _terms(normalised):
        yield term, starts[start], ends[end - 1]


def _normalise(run: str) -> tuple[str, list[int], list[int]]:
    """NFKC, casefold and drop invisibles; for each output character, the original span it came from.

    Each base character and the marks after it are normalised on their own, which gives the same
    text as normalising the whole run in practice. Where it would not, the run's tokens are still
    exact but all span the whole run.
    """
    pieces = [(unicodedata.normalize('NFKC', run[start:end]), start, end) for start, end in _clusters(run)]
    if ''.join(piece for piece, _, _ in pieces) != unicodedata.normalize('NFKC', run):
        pieces = [(unicodedata.normalize('NFKC', run), 0, len(run))]
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for piece, start, end in pieces:
        folded = _fold(piece)
        chars.append(folded)
        starts.extend([start] * len(folded))
        ends.extend([end] * len(folded))
    return ''.join(chars), starts, ends


def _fold(text: str) -> str:
    """Casefold and drop invisibles; `İ` casefolds to `i` plus a combining dot, and people type `i`."""
    return _IGNORABLE_RE.sub('', text.casefold()).replace('i\u0307', 'i')


def _clusters(run: str) -> Iterator[tuple[int, int]]:
    """Spans of a base character plus what composes with it (combining marks, jamo, voicing marks)."""
    _, mark, _ = _patterns()
    start = 0
    for index in range(1, len(run)):
        char = run[index]
        if not (mark.match(char) or _CONTINUES_CLUSTER.match(char)):
            yield start, index
            start = index
    yield start, len(run)


def _terms(normalised: str) -> Iterator[tuple[str, int, int]]:
    """Terms of a normalised run with their spans in it: words whole, unspaced scripts as bigrams."""
    _, _, terms = _patterns()
    for match in terms.finditer(normalised):
        start, end = match.span()
        if match.lastgroup == 'word':
            yield analyze_word(match.group()), start, end
        elif end - start == 1:
            yield match.group(), start, end
        else:
            for index in range(start, end - 1):
                yield normalised[index : index + 2], index, index + 2
