"""Composing measures a widened block by what it gains, not again whole: the two must agree exactly.

An answer's blocks grow a message at a time within the budget; the byte count of each step comes
from `widened` (the new line, one run-or-time change, and on the left a new header). Were it off by
a byte, answers would overrun their budget or stop short of it. Here every widening of real
searches (runs changing, times after gaps and across dates, store-wide headers naming
conversations, both sides) is checked against the block's size measured whole.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage

from durable_recall import ConversationSearch
from durable_recall.search import _blocks
from durable_recall.search._compose import Block, compose
from durable_recall.search._hits import Line

from ._stub import T0, StubSource, context, reply, request, user

pytestmark = pytest.mark.anyio


def _chat(source: StubSource, conversation_id: str, prefix: str) -> None:
    """Runs a day, a few hours or minutes apart: blocks cross runs, dates and gaps on both sides."""
    history: list[ModelMessage] = []
    topics = ['the kettle broke', 'lisbon trip with my sister', 'kettle ordered from the shop', 'ORCA-5521 blocked']
    for index in range(24):
        at = T0 + timedelta(days=index // 3, hours=9 + index % 3, minutes=7 * index)
        said = f'{topics[index % len(topics)]} (note {index})'
        answered = f'noted about {topics[(index + 1) % len(topics)]}, and a longer reply {"x" * (index % 5 * 9)}'
        history = [*history, user(said, at), reply(answered, at + timedelta(minutes=index % 12))]
        # Run ids of unequal lengths: a block that widens into an earlier run gets a header of another size.
        source.add(f'{prefix}{"-" * (index % 3)}{index}', history, conversation_id=conversation_id)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every widening's gain compared with the block measured whole; the sides seen."""
    sides: list[str] = []

    def checking(*args: Any, size: Callable[[Block], int], widened: Callable[[Block, Line, str], int], **kw: Any):
        def check(block: Block, line: Line, side: str) -> int:
            gain = widened(block, line, side)
            lines = [*block.lines, line] if side == 'right' else [line, *block.lines]
            assert gain == size(Block(lines, block.hits)) - size(block), (side, line.position)
            sides.append(side)
            return gain

        return compose(*args, size=size, widened=check, **kw)

    monkeypatch.setattr(_blocks, 'compose', checking)
    return sides


@pytest.mark.parametrize('scope', ['conversation', 'all'])
@pytest.mark.parametrize('budget', [2048, 4000, 16_000])
async def test_a_widened_block_gains_what_it_measures_whole(checked: list[str], scope: str, budget: int) -> None:
    source = StubSource()
    _chat(source, 'c1', 'r')
    _chat(source, 'c2', 's')
    tool = ConversationSearch(source, scope=scope, context_lines=6, max_result_bytes=budget)  # pyright: ignore[reportArgumentType]
    for query in ('kettle', 'lisbon sister', 'ORCA-5521', 'shop note'):
        answer = await tool.search(context(conversation_id='c1'), request(query))
        assert len(answer.encode()) <= budget
    assert 'right' in checked, 'blocks widened'
    if scope == 'conversation' and budget > 2048:  # along the record, with room: before the hits too
        assert 'left' in checked
