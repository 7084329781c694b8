"""Which messages an answer shows around its hits: chosen by relevance within the byte budget.

A fixed number of messages each side of every hit spends most of an answer on small talk and
leaves the last hits out when the budget runs short. Instead, the budget is spent in order of use:

1. every hit, best first, each with its *partner* right after it: the reply to a user message, the
   message before any other (the question an answer answers, the call a tool return answers),
   while the blocks take at most `HIT_SHARE` of the budget (the first always may take all of it);
   a hit an earlier block already shows adds nothing;
2. then, while room remains, each block widens by one message at a time, after then before,
   blocks in rank order, round after round, within the window its hit's context reaches
   (`context_lines` each side, read along the record as `_windows` says);
3. a block that widens into another merges with it (one header, the better rank's place).

A message is shown once. The result is deterministic: it depends on the ranking and the budget only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ._hits import Doc, Hit, Line

__all__ = ('HIT_SHARE', 'Block', 'compose')

HIT_SHARE = 0.7
"""The share of the budget that hits (each with its partner) may fill before the rest is spent widening.

Measured on long chats: at 4,000 bytes, ten hits with their partners leave no room for context,
and fewer blocks with context show more of what a question asks about; at 16,000 bytes the
share never binds."""


@dataclass
class Block:
    """Contiguous messages of the record shown together, and the hits among them.

    Attributes:
        lines: The messages, in record order.
        hits: The hits it shows, best first (the first one's rank places the block).
        left: Messages before `lines[0]` that it may still widen into, nearest first.
        right: Messages after `lines[-1]` that it may still widen into, nearest first.
    """

    lines: list[Line]
    hits: list[Hit]
    left: list[Line] = field(default_factory=list[Line])
    right: list[Line] = field(default_factory=list[Line])

    @property
    def own(self) -> set[Doc]:
        """The hits' own messages (marked in the block)."""
        return {(hit.candidate.run_key, hit.candidate.position) for hit in self.hits}


def _doc(line: Line) -> Doc:
    return (line.run_key, line.position)


def compose(
    hits: Sequence[Hit],
    shown: set[Doc],
    *,
    budget: int,
    size: Callable[[Block], int],
    widened: Callable[[Block, Line, str], int],
    asks_reply: Callable[[Line], bool],
    separator: int,
) -> tuple[list[Block], int]:
    """The blocks that fit `budget` bytes, and how many of `hits` did not fit (`shown` is updated).

    Args:
        hits: Ranked hits with their windows, best first.
        shown: Messages shown already (by earlier calls for the same answer); extended.
        budget: Bytes the blocks and their separators may take.
        size: A block's rendered size in bytes.
        widened: The bytes a block grows by when `line` joins it on `side` (`'right'`, `'left'`):
            what `size` would say of the widened block less what it says of the block. Widening
            is the inner loop of composing (a block grows a message at a time, round after round),
            and measuring the whole block again at each step made composing quadratic in its size.
        asks_reply: Whether a message's partner is the one after it (a user message), else before it.
        separator: The bytes between two blocks.
    """
    blocks: list[Block] = []
    owner: dict[Doc, Block] = {}
    left_out = 0
    growth = _Growth(blocks, owner, 0, budget=budget, size=size, widened=widened, separator=separator)
    for number, hit in enumerate(hits):
        found = (hit.candidate.run_key, hit.candidate.position)
        if found in shown or found in owner:
            continue
        index = next((i for i, line in enumerate(hit.lines) if _doc(line) == found), None)
        if index is None:
            continue
        block = Block([hit.lines[index]], [hit], _free(list(hit.lines[:index])[::-1], shown), [])
        block.right = _free(list(hit.lines[index + 1 :]), shown)
        if not growth.add(block, limit=budget if not blocks else int(budget * HIT_SHARE)):
            left_out = len(hits) - number
            # A hit left out that a block widens into is shown there all the same, marked.
            growth.pending = {(later.candidate.run_key, later.candidate.position): later for later in hits[number:]}
            break
        owner[found] = block
        growth.step(block, 'right' if asks_reply(hit.lines[index]) else 'left')  # its partner, with it
    grew = True
    while grew:  # then wider, a message at a time, blocks in rank order
        grew = False
        for block in list(blocks):
            grew = growth.step(block, 'right') | growth.step(block, 'left') or grew
    blocks = [block for block in blocks if block.lines]
    for block in blocks:
        shown.update(_doc(line) for line in block.lines)
    return blocks, left_out - growth.absorbed


def _free(lines: Sequence[Line], shown: set[Doc]) -> list[Line]:
    """The leading messages of `lines` not shown yet (a message shown elsewhere ends the reach there)."""
    out: list[Line] = []
    for line in lines:
        if _doc(line) in shown:
            break
        out.append(line)
    return out


class _Growth:
    """Widens blocks within the budget, merging two that meet."""

    def __init__(
        self,
        blocks: list[Block],
        owner: dict[Doc, Block],
        used: int,
        *,
        budget: int,
        size: Callable[[Block], int],
        widened: Callable[[Block, Line, str], int],
        separator: int,
    ) -> None:
        self.blocks, self.owner, self.used, self.budget = blocks, owner, used, budget
        self.size, self.widened, self.separator = size, widened, separator
        self.sizes = {id(block): size(block) for block in blocks}
        self.pending: dict[Doc, Hit] = {}
        """Hits left out for want of room, by their message: marked where a block widens into them."""
        self.absorbed = 0

    def add(self, block: Block, *, limit: int) -> bool:
        """Append a new block if the blocks then take at most `limit` bytes: whether it did."""
        cost = self.size(block)
        extra = self.separator if self.blocks else 0
        if self.used + cost + extra > min(limit, self.budget):
            return False
        self.blocks.append(block)
        self.sizes[id(block)] = cost
        self.used += cost + extra
        return True

    def step(self, block: Block, side: str) -> bool:
        """Widen `block` by one message on `side` (or merge it with the block there): whether it did."""
        pool = block.right if side == 'right' else block.left
        while pool and self.owner.get(_doc(pool[0])) is block:
            pool.pop(0)
        if not block.lines or not pool:
            return False
        line = pool[0]
        other = self.owner.get(_doc(line))
        if other is not None:
            edge = other.lines[0] if side == 'right' else other.lines[-1]
            if _doc(edge) != _doc(line):
                pool.clear()
                return False
            return self._merge(block, other, side)
        new = self.sizes[id(block)] + self.widened(block, line, side)
        if self.used + new - self.sizes[id(block)] > self.budget:
            pool.clear()
            return False
        pool.pop(0)
        block.lines = [*block.lines, line] if side == 'right' else [line, *block.lines]
        self.owner[_doc(line)] = block
        absorbed = self.pending.pop(_doc(line), None)
        if absorbed is not None:
            block.hits.append(absorbed)
            self.absorbed += 1
        self.used += new - self.sizes[id(block)]
        self.sizes[id(block)] = new
        return True

    def _merge(self, block: Block, other: Block, side: str) -> bool:
        better = self.blocks.index(block) < self.blocks.index(other)
        merged = _merge(block, other, side, better=better)
        new = self.size(merged)
        delta = new - self.sizes[id(block)] - self.sizes[id(other)] - self.separator
        if self.used + delta > self.budget:
            (block.right if side == 'right' else block.left).clear()
            return False
        holder = _apply_merge(block, other, merged, self.owner, self.blocks)
        self.sizes[id(holder)] = new
        self.used += delta
        return True


def _merge(block: Block, other: Block, side: str, *, better: bool) -> Block:
    """One block of both, in record order; its hits best first."""
    first, second = (block, other) if side == 'right' else (other, block)
    hits = [*block.hits, *other.hits] if better else [*other.hits, *block.hits]
    return Block([*first.lines, *second.lines], hits, first.left, second.right)


def _apply_merge(block: Block, other: Block, merged: Block, owner: dict[Doc, Block], blocks: list[Block]) -> Block:
    """The better ranked of the two becomes the merged block (it keeps its place); the other is emptied."""
    holder, gone = (block, other) if blocks.index(block) < blocks.index(other) else (other, block)
    holder.lines, holder.hits, holder.left, holder.right = merged.lines, merged.hits, merged.left, merged.right
    for line in holder.lines:
        owner[_doc(line)] = holder
    gone.lines, gone.hits, gone.left, gone.right = [], [], [], []
    return holder
