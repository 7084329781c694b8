"""Query stopwords: the function words a question is phrased with, which say nothing of what it asks for.

A search's words are often a question ("What did Melanie paint after the camping trip?"). In a
chat, the words that make it a question (`what`, `did`, `the`, `after`) are said in most messages,
above all in the other questions of the chat; BM25 gives each a small weight, but a message that
repeats several of them outranks one that holds the single word the question is about. Dropping
them from the query, and only from the query, leaves the rest of the ranking as it was: BM25 over
the words that remain, with the same statistics (the index keeps every word, so a search made of
stopwords alone still finds them: such a query keeps all its words).

The default list is NLTK's English stopword list (the one most IR toolkits ship), less the words
whose pieces are also content words: the tokenizer splits `won't` into `won` and `t`, and `won`
("won the race") must stay searchable; so must `don` (the name) and `ma`.

Measured on five long real chats (LoCoMo, 759 questions phrased as questions, `python -m
benchmarks.locomo`): the ten best matches hold 0.550 of the evidence turns, against 0.500 with
every word kept; the first ten blocks of a 4,000-byte answer 0.617 (0.580), of a 16,000-byte one
0.790 (0.746). On the synthetic recall benchmark's held-out seed (`python -m benchmarks.run
--workload recall`), recall@10 0.857 (0.810); and a warm search is faster, since a common word's
postings are the longest to score. Most of the gain is the question words (`what`, `when`, `did`,
`how`): Lucene's shorter English list, which has none, gained nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from ._analyzer import on_change
from ._tokenize import tokenize

__all__ = ('ENGLISH_STOPWORDS', 'check_stopwords', 'stop_terms')

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves
    he him his himself she she's her hers herself it it's its itself they them their theirs themselves
    what which who whom this that that'll these those am is are was were be been being have has had
    having do does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more most other
    some such no nor not only own same so than too very s t can will just should should've now d
    ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't
    haven haven't isn isn't mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't
    wasn wasn't weren weren't wouldn wouldn't
    """.split()  # noqa: SIM905 (a list of 176 quoted words would be harder to check against NLTK's)
)
"""The default query stopwords: NLTK's English list without `don`, `don't`, `ma` and `won't`."""

_terms: dict[frozenset[str], frozenset[str]] = {}
on_change(_terms.clear)


def stop_terms(words: frozenset[str]) -> frozenset[str]:
    """The terms `words` become under the analyzer in use (`doing` is `do`, `you're` is `you` and `re`)."""
    found = _terms.get(words)
    if found is None:
        found = _terms[words] = frozenset(term for word in words for term in tokenize(word))
    return found


def check_stopwords(words: Iterable[str] | None) -> frozenset[str]:
    """`words` as a frozenset, or a `TypeError` naming the bad value (configuration errors show at construction).

    A single string is refused: `stopwords='the'` would mean the letters `t`, `h` and `e`.
    """
    if words is None:
        return frozenset()
    if isinstance(words, str) or not isinstance(words, Collection):
        raise TypeError(f'stopwords must be a collection of words (strings), got {words!r}')
    bad = [word for word in words if not isinstance(word, str)]  # pyright: ignore[reportUnnecessaryIsInstance]
    if bad:
        raise TypeError(f'stopwords must be strings, got {bad[0]!r}')
    return frozenset(words)
