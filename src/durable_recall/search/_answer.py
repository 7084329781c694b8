"""What the model reads back: result blocks, the fixed answers for empty or refused searches, the budget.

Every answer is a plain string that explains itself: the model should never need an exception
to learn why a search found nothing. Answers about scope never reveal whether data exists
outside it. Query and run id are echoed with `repr`, clipped, so quotes and control characters
cannot make the header ambiguous.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache

from ..base import CorruptRunError, CorruptSnapshotError
from ._compose import Block
from ._hits import Doc, Line

__all__ = (
    'SEPARATOR',
    'empty_conversation',
    'empty_store',
    'blocks_budget',
    'blocks_fitting',
    'hits_in',
    'echo',
    'fit',
    'format_blocks',
    'note_for',
    'block_header',
    'change_line',
    'line_text',
    'render_block',
    'said_at',
    'shown_blocks',
    'no_conversation',
    'no_matches',
    'no_run',
    'no_terms',
    'unreadable',
    'unreadable_note',
)

_ECHO_LIMIT = 120


def echo(value: str) -> str:
    """A user-supplied string, quoted and clipped for display."""
    clipped = value if len(value) <= _ECHO_LIMIT else value[:_ECHO_LIMIT] + '…'
    return repr(clipped)


def no_conversation() -> str:
    """Conversation scope without a conversation id: fail closed."""
    return (
        'This run has no conversation id, so a conversation-scoped search has nothing it may read. '
        'The application must pass `conversation_id=` to `Agent.run(...)` so that this '
        "conversation's persisted history can be told apart from every other conversation in the store."
    )


def no_run(run_id: str) -> str:
    """The one answer for an unknown run, an out-of-scope run and a run with nothing persisted."""
    return f'No persisted history for run {echo(run_id)}.'


def empty_conversation() -> str:
    """Conversation scope, nothing persisted yet."""
    return (
        'No persisted history in this conversation yet. The search covers only runs that share this '
        "run's conversation id (set with `conversation_id=` or inherited through `message_history`)."
    )


def empty_store() -> str:
    """Store-wide scope, nothing persisted at all."""
    return (
        'No persisted conversation history to search yet. History accumulates as runs persist their '
        'steps: add `StepPersistence` to the agent, on the same store this search reads.'
    )


def no_terms(query: str) -> str:
    """A query with no searchable words (empty, punctuation only)."""
    return f'The query {echo(query)} has no searchable words. Search for distinctive words: names, values, paths.'


def no_matches(query: str, total: int) -> str:
    """Nothing scored."""
    return f'No matches for {echo(query)} in {_persisted(total)}.'


def unreadable(problem: CorruptSnapshotError | CorruptRunError) -> str:
    """How the answer names a run, or a snapshot of it, that could not be read."""
    if isinstance(problem, CorruptRunError) or problem.index < 0:  # -1: no one snapshot (a log entry, the run)
        return f'run {echo(problem.run_id)} ({problem.reason})'
    return f'run {echo(problem.run_id)}, snapshot {problem.index} ({problem.reason})'


def unreadable_note(problems: Sequence[str], max_bytes: int) -> str:
    """Runs that could not be read; named so that nothing is silently missing from the results.

    At most `max_bytes` of UTF-8 (at least the sentence and a count): past that, the rest are
    counted, not named, so that a store with many unreadable runs cannot push the answer over its
    budget or crowd the results out.
    """
    head = 'Warning: part of the persisted history could not be read and was not searched: '
    named: list[str] = []
    used = len(head.encode()) + 1
    for index, problem in enumerate(problems):
        rest = len(problems) - index - 1
        tail = f'; and {rest} more' if rest else ''
        cost = len(problem.encode()) + (2 if named else 0)
        if used + cost + len(tail.encode()) > max_bytes:
            break
        named.append(problem)
        used += cost
    left = len(problems) - len(named)
    if not named:
        parts = (
            'part of the persisted history could not be read and was'
            if left == 1
            else ('parts of the persisted history could not be read and were')
        )
        return f'Warning: {left} {parts} not searched.'
    return head + '; '.join(named) + (f'; and {left} more' if left else '') + '.'


NOTE_SHARE = 4
"""The note naming unreadable runs takes at most a quarter of an answer's budget."""


def semantic_failed(error: Exception) -> str:
    """The note of a hybrid search whose embedder failed: it was ranked by BM25 alone (the error's type, no message)."""
    return (
        f'Note: ranking by meaning was unavailable for this search ({type(error).__name__}); '
        'the results are ranked by words alone.'
    )


def note_for(problems: Sequence[str], max_result_bytes: int) -> str:
    """The unreadable-runs note as appended to an answer (with its blank line), or `''` for none."""
    if not problems:
        return ''
    return '\n\n' + unreadable_note(problems, max_result_bytes // NOTE_SHARE - 2)


def fit(text: str, max_bytes: int) -> str:
    """`text` cut to `max_bytes` of UTF-8 if it is longer (never inside a character)."""
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    return data[: max(max_bytes - 4, 0)].decode(errors='ignore') + ' …'


def render_block(
    block: Block,
    texts: Mapping[Doc, Sequence[str]],
    names: Mapping[int, str],
    *,
    conversation: bool,
) -> str:
    """A block: one header (score, run, time), then its lines; a run or a time only where it changes.

    The header names the run and the time of the block's first line, and, with `conversation`
    (a store-wide search), its conversation. A line of another run opens with `(run: <id>)`, and a
    line said 10 minutes or more after the line before it, or on another date, with its time
    (`change_line`), so that positions (numbered within their run) and times stay unambiguous at
    the cost of a few bytes where they change, not on every line. Run ids are shortened
    (`short_ids`); a search's `run_id` accepts them as they are shown.
    """
    first = block.lines[0]
    out = [block_header(block, names, conversation=conversation)]
    own = block.own
    previous = first
    for line in block.lines:
        change = change_line(previous, line, names)
        if change:
            out.append(change)
        previous = line
        out.extend(line_text(line, texts[(line.run_key, line.position)], own=(line.run_key, line.position) in own))
    return '\n'.join(out)


def block_header(block: Block, names: Mapping[int, str], *, conversation: bool, first: Line | None = None) -> str:
    """A block's header: its best score, its first line's run (and conversation, store-wide) and time.

    `first` stands for the block's first line: what the header would be, were the block to start there.
    """
    first = block.lines[0] if first is None else first
    label = f'run: {names[first.run_key]}'
    if conversation and first.run.conversation_id:
        label += f' | conversation: {first.run.conversation_id}'
    return f'[score: {block.hits[0].score:.1f} | {label} | {said_at(first.time)}]'


TIME_GAP = 600.0
"""Seconds between two lines of a block from which the later one shows its time again."""


def change_line(previous: Line, line: Line, names: Mapping[int, str]) -> str:
    """What changed from the line before (`''`: nothing): its run; its time after a gap (the date when it changed).

    A time is shown again where the date changed or `TIME_GAP` (10 minutes) or more passed since
    the line before: that is where a conversation resumed, and what "yesterday" in the text is
    resolved against. Within one sitting the header's time stands; minute-by-minute times would
    spend bytes on every exchange and make an answer's size depend on where the clock's minutes
    happened to fall, so that two runs of the same loop composed different answers.
    """
    changes: list[str] = []
    if line.run_key != previous.run_key:
        changes.append(f'run: {names[line.run_key]}')
    moment, before = said_at(line.time), said_at(previous.time)
    if moment[:10] != before[:10]:
        changes.append(moment)
    elif abs(line.time - previous.time) >= TIME_GAP:
        changes.append(moment[11:16])
    return f'  ({" | ".join(changes)})' if changes else ''


def line_text(line: Line, rendered: Sequence[str], *, own: bool) -> list[str]:
    """A message's lines in a block: `>` marks a match; its position; continuation lines indented."""
    return [f'{">" if own else " "}[{line.position}] {rendered[0]}', *(f'     {text}' for text in rendered[1:])]


@lru_cache(maxsize=4096)
def said_at(moment: float) -> str:
    """A message's time as blocks show it: `2026-01-05 09:25 UTC` (minutes, always UTC).

    One compact format everywhere, so that the model can resolve "yesterday" or "last week" in
    the text against it and compare blocks. Kept per moment: a warm process shows the same
    messages again, and formatting their times was a tenth of rendering a chat's answer.
    """
    try:
        return datetime.fromtimestamp(moment, UTC).strftime('%Y-%m-%d %H:%M UTC')
    except (OverflowError, OSError, ValueError):
        return 'time unknown'


def format_blocks(
    query: str, total: int, blocks: Sequence[str], *, count: int, max_bytes: int, matched: int | None = None
) -> str:
    """The answer from the rendered blocks of `count` matches: those that fit `max_bytes`, and a closing line.

    The caller may render only as many blocks as can fit (see `blocks_fitting`); the rest are
    counted as left out all the same. With `matched` (every matching message, counted apart from
    windows and budget), the header says how many of them the blocks show: `3 of 12 matches`.
    """
    kept = _kept(query, total, blocks, count=count, max_bytes=max_bytes, matched=matched)
    shown = sum(map(hits_in, kept))
    text = _header(query, total, shown, matched) + '\n\n' + SEPARATOR.join(kept)
    left = max(count - shown, 0)
    if left:
        text += (
            f'\n\n[{left} more {"match was" if left == 1 else "matches were"} left out to keep this result under '
            f'{max_bytes} bytes: narrow the query, or pass `run_id` to search one run.]'
        )
    return text


def blocks_fitting(
    query: str, total: int, blocks: Sequence[str], *, count: int, max_bytes: int, matched: int | None = None
) -> int:
    """How many of the first rendered blocks the answer keeps whole (rendering more cannot add to them)."""
    return len(_kept(query, total, blocks, count=count, max_bytes=max_bytes, cut=False, matched=matched))


def hits_in(block: str) -> int:
    """The matches a rendered block shows: its lines marked `>` (a block may show several, merged)."""
    return block.count('\n>[')


def blocks_budget(query: str, total: int, count: int, max_bytes: int, matched: int | None = None) -> int:
    """The bytes an answer's blocks and their separators may take (what `format_blocks` keeps whole)."""
    return max_bytes - 200 - len(_header(query, total, count, matched).encode()) - 2 - 4  # 4: the count's digits


def shown_blocks(
    query: str, total: int, blocks: Sequence[str], *, count: int, max_bytes: int, matched: int | None = None
) -> int:
    """How many blocks `format_blocks` shows with the same arguments (the last one cut, if it must be)."""
    return len(_kept(query, total, blocks, count=count, max_bytes=max_bytes, matched=matched))


def _header(query: str, total: int, count: int, matched: int | None = None) -> str:
    if matched is None:
        noun = 'match' if count == 1 else 'matches'
        return f'{count} {noun} for {echo(query)} in {_persisted(total)}:'
    noun = 'match' if matched == 1 else 'matches'
    return f'{count} of {matched} {noun} for {echo(query)} in {_persisted(total)}:'


def _persisted(total: int) -> str:
    return f'{total} persisted {"message" if total == 1 else "messages"}'


SEPARATOR = '\n\n---\n\n'
"""Between blocks."""


def _kept(
    query: str,
    total: int,
    blocks: Sequence[str],
    *,
    count: int,
    max_bytes: int,
    cut: bool = True,
    matched: int | None = None,
) -> list[str]:
    kept: list[str] = []
    used = len(_header(query, total, count, matched).encode()) + 2
    for block in blocks:
        cost = len(block.encode()) + (len(SEPARATOR) if kept else 0)
        if used + cost > max_bytes - 200:  # room for the closing line
            break
        kept.append(block)
        used += cost
    if cut and not kept and blocks:
        # Even one block is over budget: show the top of it rather than nothing.
        budget = max(max_bytes - used - 200, 0)
        kept = [blocks[0].encode()[:budget].decode(errors='ignore') + ' …']
    return kept
