"""A message an answer shows: rendered from its stored JSON, decoded into pydantic-ai objects only when asked.

An answer shows 35 to 40 messages; validating each into pydantic-ai's classes was most of what
showing it cost. A store that hands back log bodies as JSON text (`stores.LogBodies`) lets the
answer render them directly (`text.prepare_stored`); `message` still gives the pydantic-ai object
(the record's view of it) to whoever asks, decoding it then.

A body the fast path declines (a shape it does not know) is decoded when it is read, as before, so
one that is not a message is found and named then, never shown as something else. A summary
position (the record shows the summary a stored message carries, `summary_view`) is always decoded.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pydantic_ai.messages import ModelMessage

from ..base import load_messages
from ..history import strip_artifacts, summary_view
from ..text import Prepared, display_lines, prepare_stored, stored_lines

__all__ = ('Shown', 'StoredMessage', 'record_view_of')

_OBJECT_SIZE = 1024
"""What a message a corpus hands back as an object counts for in a cache: its JSON was never seen."""

StoredMessage = str | ModelMessage
"""A log entry as a corpus reads it back: the stored JSON text, or the message itself."""


class Shown:
    """One message as an answer shows it; built by `Shown.of`."""

    __slots__ = ('_body', '_message', '_prepared', '_size', '_summary')

    def __init__(
        self,
        *,
        prepared: Prepared | None = None,
        body: str = '',
        message: ModelMessage | None = None,
        summary: bool,
        size: int = 0,
    ) -> None:
        self._prepared = prepared
        self._body = body
        self._message = message
        self._summary = summary
        self._size = size or len(body) or _OBJECT_SIZE

    @property
    def size(self) -> int:
        """What it counts for in a cache: its stored JSON's characters (nominal for one read as an object)."""
        return self._size

    @classmethod
    def of(cls, stored: StoredMessage, *, summary: bool) -> Shown:
        """A stored message ready to show: prepared from its JSON where the fast path knows it, else decoded.

        Raises:
            MessageDecodeError: A body the fast path declines does not decode as a message.
        """
        if isinstance(stored, str):
            prepared = None if summary else prepare_stored(stored)
            if prepared is not None:
                return cls(prepared=prepared, body=stored, summary=summary)
            size = len(stored)
            [stored] = load_messages([stored])
            return cls(message=record_view_of(stored, summary), summary=summary, size=size)
        return cls(message=record_view_of(stored, summary), summary=summary)

    @property
    def message(self) -> ModelMessage:
        """The message as the record holds it (decoded now if it was shown from its JSON).

        Raises:
            MessageDecodeError: The fast path accepted a body pydantic-ai does not (not one this
                library wrote).
        """
        if self._message is None:
            [stored] = load_messages([self._body])
            self._message = record_view_of(stored, self._summary)
        return self._message

    def lines(
        self, terms: Collection[str], *, rarity: Mapping[str, float] | None, skip_tools: Collection[str]
    ) -> list[str]:
        """Its display lines, exactly `display_lines` of `message`."""
        if self._prepared is not None:
            return stored_lines(self._prepared, terms, rarity=rarity, skip_tools=skip_tools)
        return display_lines(self.message, terms, rarity=rarity, skip_tools=skip_tools)


def record_view_of(message: ModelMessage, summary: bool) -> ModelMessage:
    """A stored message as the record holds it: its summary view, or without compaction artifacts.

    Display of the latter equals display of the stored message (every artifact is a part display
    leaves out), which is why the JSON fast path need not strip them.
    """
    if summary:
        return summary_view(message) or message
    return strip_artifacts(message) or message
