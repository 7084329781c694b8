"""The analyzer: what a word becomes after the tokenizer has found it, at index and query time alike.

The tokenizer (`_tokenize`) finds words and normalises them (NFKC, casefold). This module then:

* **keeps identifiers exact.** A word holding a digit or an underscore (`orca`, `5521`, `v2`,
  `snake_case`, `a1b2c3`, `3.11` as `3` and `11`) is never stemmed or folded: ids, versions,
  hashes and names in code match as they were written;
* **folds accents on Latin letters**: `café` is the term `cafe`, `naïve` is `naive`, so a search
  typed without accents finds the accented word. Only marks on Latin letters go: the vowel signs
  of Indic, Thai or Arabic text are letters of their words and stay;
* **stems Latin-script words** of three letters or more with a Snowball stemmer (English, that
  is Porter2, by default): `visited` and `visits` are the term `visit`, `birthdays` is
  `birthday`. Other scripts are left as the tokenizer gave them (Cyrillic, Greek, ...), and CJK
  and Thai bigrams never reach this module.

Why stemming: on a long chat, the words a question uses are often another form of the words the
answer used ("visit" for "visited"); measured with `python -m benchmarks.run --workload recall`,
stemming is the largest single gain in evidence recall (see docs/performance.md). Snowball English and
the original Porter scored the same on both seeds; English is the default, being the one the
Snowball project recommends for English (it fixes Porter's known over- and under-stemming).
Snowball through
PyStemmer (the C implementation the Snowball project maintains) costs a dictionary lookup per word
once a word has been seen: analysed words are cached.

The analyzer is part of what the index holds: its `ANALYZER_NAME` is recorded in the store's
`dr_meta` (`index_analyzer`) by the schema migration that rebuilt the index for it. A release
that changes the analyzer bumps `INDEX_VERSION` and ships a migration that rebuilds the index.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import cache
from typing import Protocol, cast

__all__ = (
    'ANALYZERS',
    'ANALYZER_NAME',
    'DEFAULT_ANALYZER',
    'analyze_word',
    'analyzer_name',
    'cached_term',
    'use_analyzer',
)


class _Stemmer(Protocol):
    def stemWord(self, word: str) -> str: ...


ANALYZERS = ('english', 'porter', 'plain')
"""Analyzers this release can build: Snowball English (Porter2), the original Porter, or no stemming.

All three keep identifiers exact and fold Latin accents. Only the default builds a store's index;
the others exist to measure the default against (`benchmarks._recall`).
"""

DEFAULT_ANALYZER = 'english'
"""The analyzer that builds every store's index (the others are for measuring it)."""

ANALYZER_NAME = 'durable-recall/1 snowball:english fold:latin'
"""The default analyzer, as recorded in `dr_meta` (`index_analyzer`): compatibility data."""

_NAMES = {
    'english': ANALYZER_NAME,
    'porter': 'durable-recall/1 snowball:porter fold:latin',
    'plain': 'durable-recall/1 fold:latin',
}

_MAX_CACHED = 1 << 17
"""Distinct words kept analysed; the cache is emptied when it reaches this (a word is ~1 us to redo)."""

_MIN_STEMMED = 3
"""Shorter words are kept as they are (`as`, `is`): Porter would make `as` into `a` and `s` into nothing."""

_cache: dict[str, str] = {}

cached_term = _cache.get
"""`analyze_word`'s cached answer for a word, or `None` (the cache is cleared, never replaced).

For a caller's inner loop, where a lookup is cheaper than a call: `cached_term(w) or analyze_word(w)`."""
_current = [DEFAULT_ANALYZER]
_cleared: list[Callable[[], None]] = []


def analyzer_name() -> str:
    """The name of the analyzer in use (what `dr_meta` records for an index built by it)."""
    return _NAMES[_current[0]]


def use_analyzer(name: str) -> None:
    """Switch this process's analyzer: for measuring the alternatives only, never with a store in use.

    A store's index is built by one analyzer; searching it with another misses words. The
    benchmark builds a fresh store per analyzer.

    Raises:
        ValueError: `name` is not one of `ANALYZERS`.
    """
    if name not in ANALYZERS:
        raise ValueError(f'unknown analyzer {name!r}: use one of {", ".join(ANALYZERS)}')
    _current[0] = name
    _cache.clear()
    for clear in _cleared:
        clear()


def on_change(clear: Callable[[], None]) -> None:
    """Have `clear` called when the analyzer changes (caches of analysed text elsewhere in the layer)."""
    _cleared.append(clear)


def analyze_word(word: str) -> str:
    """The term a normalised, casefolded word is indexed and searched by."""
    term = _cache.get(word)
    if term is None:
        if len(_cache) >= _MAX_CACHED:
            _cache.clear()
        term = _cache[word] = _analyze(word)
    return term


def _analyze(word: str) -> str:
    if not word.isalpha():
        return word  # digits or underscores: an identifier, a number, a version
    if not word.isascii():
        word = _fold(word)
        if not word.isascii():
            return word  # another script (or a Latin letter with no plain form, like `ø`): as is
    stemmer = _stemmer(_current[0])
    if stemmer is None or len(word) < _MIN_STEMMED:
        return word
    return stemmer.stemWord(word) or word


def _fold(word: str) -> str:
    """Drop combining marks that sit on Latin letters (`é` -> `e`); keep every other mark."""
    decomposed = unicodedata.normalize('NFD', word)
    kept: list[str] = []
    latin = False
    for char in decomposed:
        if unicodedata.combining(char):
            if latin:
                continue
        else:
            latin = _is_latin(char)
        kept.append(char)
    return unicodedata.normalize('NFC', ''.join(kept))


def _is_latin(char: str) -> bool:
    code = ord(char)
    return code < 0x250 or 0x1E00 <= code <= 0x1EFF or 0x2C60 <= code <= 0x2C7F or 0xA720 <= code <= 0xA7FF


@cache
def _stemmer(name: str) -> _Stemmer | None:
    """The Snowball stemmer of an analyzer (`None` for `plain`); imported on first use."""
    if name == 'plain':
        return None
    import Stemmer

    return cast(_Stemmer, Stemmer.Stemmer(name))  # pyright: ignore[reportUnknownMemberType]
