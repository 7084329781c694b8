r"""Stored text made safe for a terminal: control characters shown as escapes, never sent raw.

Messages, run ids and conversation ids are whatever an agent, a model or a user wrote. Written to
a terminal raw, an escape sequence in them could recolour it, move the cursor and rewrite lines
(hiding or faking output), set the window title, or set the clipboard (OSC 52). So every text
output of the CLI goes through `SafeText`, which shows each control character as `\xHH`: C0
controls except newline and tab, DEL, and C1 controls (U+0080 to U+009F, which some terminals read
as ESC sequences too). An ESC shown as `\x1b` starts no sequence, so nothing after it is read as one.
Table cells and one-line fields use `clean(..., layout=False)`, which escapes newline and tab too:
a newline inside an id must not start a line of its own.

JSON needs no wrapper for C0 (the encoder escapes it), but leaves DEL and C1 raw: `write_json`
escapes them as `\u007f` and the like, which any JSON reader decodes back to the same text.
"""

from __future__ import annotations

import re
from typing import TextIO, cast

__all__ = ('SafeText', 'clean', 'json_safe')

_CONTROLS = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')
"""Control characters escaped in running text: all but tab and newline."""

_ALL_CONTROLS = re.compile('[\x00-\x1f\x7f-\x9f]')
"""Control characters escaped in one-line text (table cells, ids): tab and newline too."""

_JSON_RAW = re.compile('[\x7f-\x9f]')
"""What `json.dumps(..., ensure_ascii=False)` leaves raw that a terminal may act on."""


def _escaped(found: re.Match[str]) -> str:
    return f'\\x{ord(found.group()):02x}'


def clean(text: str, *, layout: bool = True) -> str:
    r"""`text` with its control characters shown as `\xHH` (newline and tab kept when `layout`)."""
    return (_CONTROLS if layout else _ALL_CONTROLS).sub(_escaped, text)


def json_safe(document: str) -> str:
    r"""A JSON document with DEL and C1 controls written as `\u00XX` escapes (the same JSON value)."""
    return _JSON_RAW.sub(lambda found: f'\\u{ord(found.group()):04x}', document)


class SafeText:
    """A text stream that escapes control characters in everything written to it (see `clean`)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        """Write `text`, its control characters escaped."""
        return self._stream.write(clean(text))

    def flush(self) -> None:
        """Flush the stream underneath."""
        self._stream.flush()

    def isatty(self) -> bool:
        """Whether the stream underneath is a terminal."""
        return self._stream.isatty()

    def fileno(self) -> int:
        """The stream underneath's file descriptor."""
        return self._stream.fileno()

    @classmethod
    def wrap(cls, stream: TextIO) -> TextIO:
        """`stream` behind a `SafeText`, typed as the `TextIO` the commands write to."""
        return cast(TextIO, cls(stream))
