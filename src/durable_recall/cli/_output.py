"""Terminal output: aligned tables, labelled and wrapped fields, JSON for scripts, a progress bar.

Text output is for people and may change; `--json` output is for scripts, and its field names are
stable (times are ISO-8601 UTC strings, absent values are `null`). The progress bar goes to stderr,
so it never mixes with either.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from ._text import clean, json_safe

__all__ = (
    'Progress',
    'count',
    'field_lines',
    'human_time',
    'iso_time',
    'shorten',
    'table',
    'terminal_width',
    'write_json',
)

_BAR_WIDTH = 28
_LABEL_WIDTH = 13


def iso_time(moment: datetime | None) -> str | None:
    """`moment` as ISO-8601 in UTC, for JSON."""
    return None if moment is None else moment.astimezone(UTC).isoformat()


def human_time(moment: datetime | None, *, seconds: bool = True) -> str:
    """`moment` in UTC to the second (or the minute), for tables; `-` when there is none."""
    if moment is None:
        return '-'
    return moment.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S' if seconds else '%Y-%m-%d %H:%M')


def count(number: int, noun: str, plural: str | None = None) -> str:
    """`1 run`, `2 runs`: a number and its noun, singular or plural as the number needs."""
    return f'{number} {noun if number == 1 else plural or noun + "s"}'


def terminal_width() -> int:
    """The width to wrap text to: the terminal's, kept between 60 and 120 columns."""
    return max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))


def write_json(value: Any, out: TextIO) -> None:
    """One JSON document, indented, with non-ASCII text kept readable (and no raw control character: `json_safe`)."""
    out.write(json_safe(json.dumps(value, indent=2, ensure_ascii=False)) + '\n')


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    max_width: int | None = None,
    shrink: Sequence[int] = (),
) -> list[str]:
    """Rows under headers in columns as wide as their widest cell; numbers align right.

    With `max_width`, the `shrink` columns (ids) are narrowed, widest first, until a line fits:
    a cell too long for its column keeps its start and end around an ellipsis (`shorten`), so
    that an id stays recognisable, and its start still works as a prefix.
    """
    cells = [list(headers), *[[clean(cell, layout=False) for cell in row] for row in rows]]
    widths = [max(len(row[column]) for row in cells) for column in range(len(headers))]
    if max_width is not None and shrink:
        over = sum(widths) + 2 * (len(widths) - 1) - max_width
        while over > 0:
            column = max(shrink, key=lambda index: widths[index])
            if widths[column] <= _MIN_SHRUNK:
                break
            widths[column] -= 1  # a character at a time from the widest: the columns end up balanced
            over -= 1
        for row in cells[1:]:
            for column in shrink:
                row[column] = shorten(row[column], widths[column])
    numeric = [all(_is_number(row[column]) for row in cells[1:]) and len(cells) > 1 for column in range(len(headers))]
    lines: list[str] = []
    for row in cells:
        padded = [
            cell.rjust(width) if is_number else cell.ljust(width)
            for cell, width, is_number in zip(row, widths, numeric, strict=True)
        ]
        lines.append('  '.join(padded).rstrip())
    return lines


def field_lines(label: str, text: str, width: int, *, indent: str = '  ') -> list[str]:
    """`label` in a fixed column, `text` wrapped beside it; the text's own line breaks are kept."""
    head = f'{indent}{label:<{_LABEL_WIDTH}} '
    hang = ' ' * len(head)
    lines: list[str] = []
    for paragraph in text.splitlines() or ['']:
        wrapped = textwrap.wrap(paragraph, width=max(width - len(head), 20), break_on_hyphens=False) or ['']
        lines.extend(wrapped)
    return [(head if index == 0 else hang) + line for index, line in enumerate(lines)]


_MIN_SHRUNK = 10
"""The narrowest a shortened id column gets (enough for an id's recognisable start and end)."""


def shorten(text: str, width: int) -> str:
    """`text` in `width` characters: its start and end around `…` when it is longer."""
    if len(text) <= width:
        return text
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return text[:head] + '…' + (text[-tail:] if tail else '')


def _is_number(cell: str) -> bool:
    return cell.replace(',', '').isdigit() or cell == '-'


class Progress:
    """A one-line progress bar on stderr, redrawn at most ten times a second.

    Long work (reading every run of a large store for the first time) says how far it got instead
    of looking stuck. The bar is drawn only when `enabled`; callers enable it for a terminal with
    enough work to wait for, or when asked with `--progress`.
    """

    def __init__(self, label: str, total: int, *, stream: TextIO, enabled: bool) -> None:
        self._label = label
        self._total = total
        self._stream = stream
        self._enabled = enabled and total > 0
        self._done = 0
        self._drawn_at = 0.0
        self._drawn = False

    @property
    def done(self) -> int:
        """Units counted so far."""
        return self._done

    def advance(self, step: int = 1) -> None:
        """Count `step` more units done, and redraw if it is time to."""
        self._done = min(self._done + step, self._total)
        now = time.monotonic()
        if self._enabled and (now - self._drawn_at >= 0.1 or self._done == self._total):
            self._drawn_at = now
            self._draw()

    def close(self) -> None:
        """Finish the line, so what comes next starts on its own."""
        if self._drawn:
            self._stream.write('\n')
            self._stream.flush()
            self._drawn = False

    def _draw(self) -> None:
        filled = _BAR_WIDTH * self._done // self._total
        bar = '#' * filled + '.' * (_BAR_WIDTH - filled)
        self._stream.write(f'\r{self._label} [{bar}] {self._done}/{self._total}')
        self._stream.flush()
        self._drawn = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
