"""An answer's blocks from its loaded hits: messages chosen within the budget (`_compose`), then rendered.

Each message is rendered once (its display lines, clipped around the query), and a block's size
is measured on the text it will have, so the blocks chosen are exactly those the answer keeps.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from . import _answer
from ._compose import Block, compose
from ._hits import Doc, Hit, Line
from ._run_ids import short_ids

__all__ = ('render',)


def render(
    hits: Sequence[Hit],
    *,
    terms: Collection[str],
    rarity: Mapping[str, float],
    skip_tools: Collection[str],
    budget: int,
    conversation: bool,
) -> tuple[list[str], list[Hit], int]:
    """The blocks that fit `budget` bytes (with separators), the hits they show, and how many were chosen.

    The hits are in the blocks' order; the count adds the hits left out for want of room.

    Args:
        hits: The loaded hits, best first.
        terms: The query's terms (excerpts centre on them).
        rarity: Their idf.
        skip_tools: As for `display_lines`.
        budget: Bytes for the blocks and their separators.
        conversation: Name each block's conversation (a store-wide search).
    """
    texts: dict[Doc, list[str]] = {}

    def text(line: Line) -> list[str]:
        doc = (line.run_key, line.position)
        found = texts.get(doc)
        if found is None:
            found = texts[doc] = line.shown.lines(terms, rarity=rarity, skip_tools=skip_tools)
        return found

    names = short_ids({line.run_key: line.run.run_id for hit in hits for line in hit.lines})

    def asks_reply(line: Line) -> bool:
        return any(piece.startswith('User: ') for piece in text(line))

    def rendered(block: Block) -> str:
        for line in block.lines:
            text(line)
        return _answer.render_block(block, texts, names, conversation=conversation)

    def size(block: Block) -> int:
        return len(rendered(block).encode())

    blocks, left_out = compose(
        hits, set(), budget=budget, size=size, asks_reply=asks_reply, separator=len(_answer.SEPARATOR)
    )
    shown = [hit for block in blocks for hit in block.hits]
    return [rendered(block) for block in blocks], shown, len(shown) + left_out
