"""Long texts are tokenized in a worker thread, a piece at a time: the terms are exactly `tokenize`'s."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart

from durable_recall.index._text_terms import THREAD_CHARS, _pieces_terms, text_terms
from durable_recall.text import index_text, tokenize

pytestmark = pytest.mark.anyio

WORDS = ['alpha', 'Straße', '東京タワー', 'é', 'ﬁle', 'x_y', 'a\u200db', 'İstanbul', '123', 'हिन्दी']


def test_pieces_give_the_terms_of_the_whole() -> None:
    rng = random.Random(7)
    for _ in range(5):
        text = ''.join(rng.choice(WORDS) + rng.choice([' ', '', ',', '\n', '\t']) for _ in range(40_000))
        assert len(text) > 2 * THREAD_CHARS
        assert _pieces_terms(text) == Counter(tokenize(text))
    assert _pieces_terms('a' * (3 * THREAD_CHARS)) == Counter(tokenize('a' * (3 * THREAD_CHARS)))  # no space to cut at


async def test_a_long_message_counts_as_tokenize_says() -> None:
    message = ModelRequest(parts=[UserPromptPart('ZEBRA ' * THREAD_CHARS + 'Straße 東京')])
    assert await text_terms(message) == Counter(tokenize(index_text(message)))
