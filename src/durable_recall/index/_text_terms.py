"""A message's indexed terms, counted: a long text's tokenized in a worker thread, a piece at a time."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import anyio.to_thread

from ..text import index_text, tokenize

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('THREAD_CHARS', 'text_terms')


THREAD_CHARS = 65_536
"""Text at least this long is tokenized in a worker thread (see `text_terms`)."""


async def text_terms(message: ModelMessage) -> Counter[str]:
    """The terms a record message is indexed under, counted; a long text's off the event loop.

    Tokenizing is linear but runs at Python speed (a microsecond or more per character): a
    tenant's 1 MB message would hold the worker's event loop for about a second. In a thread the
    loop keeps its turns (the thread yields the GIL every few milliseconds).
    """
    text = index_text(message)
    if len(text) < THREAD_CHARS:
        return Counter(tokenize(text))
    return await anyio.to_thread.run_sync(_pieces_terms, text)


def _pieces_terms(text: str) -> Counter[str]:
    """`tokenize(text)` counted, a piece of about `THREAD_CHARS` at a time, each cut at whitespace.

    A term never spans whitespace, so the terms are the same; but one regular-expression call over
    a megabyte holds the GIL throughout (a few hundred ms), and the event loop's thread with it.
    """
    terms: Counter[str] = Counter()
    start = 0
    while start < len(text):
        cut = _SPACE.search(text, start + THREAD_CHARS)
        end = len(text) if cut is None else cut.end()
        terms.update(tokenize(text[start:end]))
        start = end
    return terms


_SPACE = re.compile(r'\s')
