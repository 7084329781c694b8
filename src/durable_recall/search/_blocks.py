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

    line_costs: dict[Doc, int] = {}
    change_costs: dict[tuple[Doc, Doc], int] = {}

    def line_cost(line: Line) -> int:
        doc = (line.run_key, line.position)
        cost = line_costs.get(doc)
        if cost is None:  # a `>` or a space: the same byte count either way
            cost = line_costs[doc] = len('\n'.join(_answer.line_text(line, text(line), own=False)).encode()) + 1
        return cost

    def change_cost(previous: Line, line: Line) -> int:
        pair = ((previous.run_key, previous.position), (line.run_key, line.position))
        cost = change_costs.get(pair)
        if cost is None:
            change = _answer.change_line(previous, line, names)
            cost = change_costs[pair] = len(change.encode()) + 1 if change else 0
        return cost

    header_costs: dict[tuple[float, int, int], int] = {}

    def header_cost(block: Block, first: Line) -> int:
        """The header's bytes were `first` the block's first line (the header names its run and time).

        Kept per best score and first line, all the header depends on: a block widening to the
        left asks for two headers each step.
        """
        key = (block.hits[0].score, first.run_key, first.position)
        cost = header_costs.get(key)
        if cost is None:
            header = _answer.block_header(block, names, conversation=conversation, first=first)
            cost = header_costs[key] = len(header.encode())
        return cost

    def size(block: Block) -> int:
        """`len(rendered(block).encode())`, from each line's and each change's cost (kept per message)."""
        lines = block.lines
        return header_cost(block, lines[0]) + sum(map(line_cost, lines)) + sum(map(change_cost, lines, lines[1:]))

    def widened(block: Block, line: Line, side: str) -> int:
        """What `size` gains when `line` joins `block` on `side`: its line, one change, and on the left a new header."""
        if side == 'right':
            return line_cost(line) + change_cost(block.lines[-1], line)
        first = block.lines[0]
        header = header_cost(block, line) - header_cost(block, first)
        return header + line_cost(line) + change_cost(line, first)

    blocks, left_out = compose(
        hits, set(), budget=budget, size=size, widened=widened, asks_reply=asks_reply, separator=len(_answer.SEPARATOR)
    )
    shown = [hit for block in blocks for hit in block.hits]
    return [rendered(block) for block in blocks], shown, len(shown) + left_out
