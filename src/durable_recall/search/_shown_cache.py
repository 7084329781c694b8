"""The messages recent answers showed, kept for the next answer: one cache per search engine.

A warm process shows the same messages again: the turns around a topic come back in the next
answer about it, and a chat's questions keep returning to the same passages. Reading a message
back costs a store read, decompression and preparing its display pieces, about a third of a warm
search on a long chat. Each conversation's ranker used to keep its own 256 messages, so a
conversation searched often kept re-reading while the caches of idle ones sat full, and a worker
holding 64 conversations' rankers could keep 16,384 messages of any size. One cache for all the
rankers of an engine, bounded in messages *and* in stored characters, gives the memory to the
conversations being searched and bounds the whole.

Keys are what `Reader` keys by: a run's registration (id, token, index key), a log number, and
whether the position is shown as its summary. A registration's key is unique in its index, and an
engine searches one index, so a message cached for one conversation (or one registration of a run
id) is never shown for another.

Safe to share between rankers that search side by side: every operation takes a lock (a ranker may
run in a worker thread), and `Reader` holds the entries it found for an answer rather than looking
them up again after its read, so an entry another search evicts meanwhile is not lost to that answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from ._shown import Shown

__all__ = ('MAX_CACHED_CHARACTERS', 'MAX_CACHED_MESSAGES', 'ShownCache')

MAX_CACHED_MESSAGES = 4096
"""Messages an engine keeps by default: the whole record of a long chat (the LoCoMo chats hold 370 to 680)."""

MAX_CACHED_CHARACTERS = 8 * 1024 * 1024
"""Characters of stored JSON an engine keeps by default: a few large tool outputs must not hold
memory that thousands of chat turns would use better."""


class ShownCache:
    """Shown messages by key, least recently used first out, within a message count and a character count."""

    def __init__(self, *, max_messages: int = MAX_CACHED_MESSAGES, max_characters: int = MAX_CACHED_CHARACTERS) -> None:
        self._items: OrderedDict[Hashable, Shown] = OrderedDict()
        self._max_messages = max_messages
        self._max_characters = max_characters
        self._characters = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def characters(self) -> int:
        """The characters the kept messages count for (`Shown.size`)."""
        return self._characters

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def get(self, key: Hashable) -> Shown | None:
        """The message kept under `key` (now the most recently used), or `None`."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Hashable, shown: Shown) -> None:
        """Keep `shown` under `key`, then drop the least recently used until both bounds hold.

        A message larger than the whole character bound is not kept.
        """
        size = shown.size
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._characters -= old.size
            if size > self._max_characters or self._max_messages <= 0:
                return
            self._items[key] = shown
            self._characters += size
            while len(self._items) > self._max_messages or self._characters > self._max_characters:
                _, gone = self._items.popitem(last=False)
                self._characters -= gone.size
