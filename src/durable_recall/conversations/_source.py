"""`ConversationStoreSource`: what any pydantic-ai `ConversationStore` holds, as a `HistorySource` for search.

A conversation store keeps each conversation as a tree of entries: the live history (root to head)
and the branches it left (`ConversationRecord.branches`), which share their prefix with it. The
search sees runs, each a sequence of messages. This source maps a conversation to:

* one run for the live history, with the conversation's id as its run id, holding every message
  from the first to the head, even those a `limit` load no longer sends;
* with `branches=True` (the default), one run per branch the conversation left that still holds
  messages of its own, newest branch first wins a shared message, run id
  `'<conversation id>#branch:<tip entry id>'`, holding only the messages that are in neither the
  live history nor a newer branch.

Run ids never collide across conversations (`live_run_id`, `branch_run_id`): a conversation id
that is empty, starts with `#` or holds `#branch:` (one that could pass for another's branch) is written
percent-encoded after a `#` instead, as in `'#B%23branch%3A<tip>'`, so no two conversations'
runs ever share an id. A history a save rewrote (compaction of a serialized
  conversation, say) is left as a branch, and its details stay searchable.

So within a conversation every stored message is searchable exactly once. A fork shares its
source's entries, and is its own conversation: its live run holds the shared prefix too, so a
search with `scope='all'` finds a shared message once under each conversation that reaches it.

It reads only the store's public primitives (`read_record`, `read_records`, `read_history`), so it
works over `InMemoryConversationStore`, the SQL stores here, or a third party's. What it read is
cached per conversation and revision: a search over an unchanged conversation costs one record read.

That is the in-memory path: each process indexes what it reads. Over `SqliteConversationStore` and
`PostgresConversationStore` (with `branches=True`), the search instead reads a persistent index in
the store's own database, with the same runs, caught up from the entries saved since it was last
indexed: a cold process re-reads no unchanged conversation, and a save that appended costs only its
new entries. A rewrite or a new branch re-indexes that conversation; a deleted one leaves no trace.
A source with a `scope`, searched with `scope='all'`, stays on the in-memory path.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, unquote_to_bytes

from pydantic_ai.messages import ModelMessage

from ..base import RunRecord
from ..history import RunHistory, message_hashes, record_view
from ._api import ConversationEntry, ConversationRecord, ConversationStore

__all__ = ('ConversationStoreSource', 'branch_run_id', 'conversation_of', 'live_run_id')

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""A run's start when none of its messages carries a time: stable, so the run record never changes."""

_BRANCH = '#branch:'
"""What joins a conversation id and a branch's tip entry id into the branch's run id."""

_ESCAPED = '#'
"""What starts the run ids of a conversation whose id is written percent-encoded (see `live_run_id`)."""


def live_run_id(conversation_id: str) -> str:
    """The run id of a conversation's live history: its id, unless that could pass for another run's.

    An id that is empty, starts with `#` or holds `#branch:` is written `'#' + <percent-encoded id>` (every
    character but letters, digits and `_.-~` encoded, so the encoded id holds no `#`). Every other
    run id starts with anything but `#`, and a plain id never holds `#branch:`, so each run id
    names exactly one conversation (`conversation_of`).
    """
    if conversation_id and not conversation_id.startswith(_ESCAPED) and _BRANCH not in conversation_id:
        return conversation_id
    return _ESCAPED + quote(conversation_id.encode('utf-8', 'surrogatepass'), safe='')


def branch_run_id(conversation_id: str, tip: str) -> str:
    """The run id of the branch of a conversation that ends at entry `tip`."""
    return f'{live_run_id(conversation_id)}{_BRANCH}{tip}'


def conversation_of(run_id: str) -> str:
    """The conversation whose live history or branch has this run id (the inverse of the two above)."""
    if run_id.startswith(_ESCAPED):
        encoded = run_id[len(_ESCAPED) :].split(_ESCAPED, 1)[0]
        try:
            return unquote_to_bytes(encoded).decode('utf-8', 'surrogatepass')
        except UnicodeDecodeError:
            return run_id  # no run id this source gives: names no conversation it has
    return run_id.split(_BRANCH, 1)[0]


_RETRIES = 5
"""How often a read is retried when a concurrent save or delete released the entries it was reading."""


@dataclass(frozen=True)
class _Read:
    """What was read of one conversation at one revision: its runs, newest content last."""

    revision: tuple[str, str | None, tuple[str, ...]]
    """The record's revision, head and branch tips: a store whose revisions repeat (a counter that
    starts over when a deleted id is saved again) still never gets another conversation's read."""
    runs: tuple[RunHistory, ...]


class ConversationStoreSource:
    """Lets `ConversationSearch` recall what a pydantic-ai `ConversationStore` holds.

    `ConversationSearch(ConversationStoreSource(store), scope='conversation')` searches the calling
    run's conversation (`agent.run(..., conversation=...)` sets its id): its whole stored history, and
    by default the branches it left (see the module's documentation for how branches map to runs).

    Args:
        store: Any `ConversationStore`: `SqliteConversationStore`, `PostgresConversationStore`,
            pydantic-ai's `InMemoryConversationStore`, or your own.
        scope: Read only conversations saved with this `ConversationStore` scope (a user, a tenant),
            as the store's own methods do with `scope=`; a conversation with another scope is one the
            source does not have. `None` reads every conversation.
        branches: Also search the branches conversations left (`branch`, or a save that rewrote the
            history); `False` searches only each live history.
        max_cached_conversations: How many conversations' reads to keep between searches.

    Raises:
        TypeError: `store` is not a `ConversationStore`, or an option has the wrong type.
        ValueError: `max_cached_conversations` is negative.
    """

    def __init__(
        self,
        store: ConversationStore,
        *,
        scope: str | None = None,
        branches: bool = True,
        max_cached_conversations: int = 1024,
    ) -> None:
        if not isinstance(store, ConversationStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f'ConversationStoreSource needs a pydantic-ai ConversationStore, got {type(store).__name__}: use '
                'SqliteConversationStore, PostgresConversationStore or InMemoryConversationStore. (For the store '
                'StepPersistence writes to, use SnapshotHistorySource.)'
            )
        if scope is not None and not isinstance(scope, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'scope must be a string or None, got {scope!r}')
        if not isinstance(branches, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'branches must be a bool, got {branches!r}')
        if isinstance(max_cached_conversations, bool) or not isinstance(max_cached_conversations, int):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'max_cached_conversations must be an int, got {max_cached_conversations!r}')
        if max_cached_conversations < 0:
            raise ValueError(f'max_cached_conversations must be at least 0, got {max_cached_conversations!r}')
        self._store = store
        self._scope = scope
        self._branches = branches
        self._max_cached = max_cached_conversations
        self._cache: OrderedDict[str, _Read] = OrderedDict()
        self._owners: dict[str, str] = {}  # run id -> conversation id, for every run listed so far
        self._versions: dict[str, tuple[tuple[str, ...], int]] = {}  # run id -> (entry ids, version)

    @staticmethod
    def live_run_id(conversation_id: str) -> str:
        """The run id of a conversation's live history (see the module docstring)."""
        return live_run_id(conversation_id)

    @staticmethod
    def branch_run_id(conversation_id: str, tip: str) -> str:
        """The run id of the branch of a conversation that ends at entry `tip`."""
        return branch_run_id(conversation_id, tip)

    @property
    def store(self) -> ConversationStore:
        """The conversation store the records are read from."""
        return self._store

    @property
    def scope(self) -> str | None:
        """The `ConversationStore` scope read (`None`: every conversation)."""
        return self._scope

    @property
    def branches(self) -> bool:
        """Whether the branches conversations left are searched."""
        return self._branches

    def __repr__(self) -> str:
        return f'ConversationStoreSource({self._store!r}, scope={self._scope!r}, branches={self._branches!r})'

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConversationStoreSource):
            return NotImplemented
        return (other._store, other._scope, other._branches) == (self._store, self._scope, self._branches)

    def __hash__(self) -> int:
        return hash((ConversationStoreSource, id(self._store), self._scope, self._branches))

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        """The runs of one conversation (one record read), or of every conversation in the source's scope."""
        if conversation_id is not None:
            record = await self._record(conversation_id)
            records = [] if record is None else [record]
        else:
            records = await self._store.read_records(scope=self._scope)
        runs: list[RunRecord] = []
        for record in records:
            read = await self._read(record)
            runs += (history.run for history in read.runs)
        runs.sort(key=lambda run: (run.started_at, run.run_id))
        return runs

    async def run_history(self, run_id: str) -> RunHistory | None:
        """One run's messages, from what the last listing read if the conversation has not changed since.

        A run id names its conversation (`conversation_of`), so a fresh source finds it without a
        listing first.
        """
        conversation_id = self._owners.get(run_id) or conversation_of(run_id)
        record = await self._record(conversation_id)
        if record is None:
            return None
        cached = self._cache.get(conversation_id)
        read = cached if cached is not None and cached.revision == _version(record) else await self._read(record)
        return next((history for history in read.runs if history.run.run_id == run_id), None)

    async def _record(self, conversation_id: str) -> ConversationRecord | None:
        record = await self._store.read_record(conversation_id)
        if record is None or (self._scope is not None and record.scope != self._scope):
            return None
        return record

    async def _read(self, record: ConversationRecord) -> _Read:
        """The conversation's runs at `record`'s revision, read again only when the revision moved."""
        cid = record.conversation_id
        cached = self._cache.get(cid)
        if cached is not None and cached.revision == _version(record):
            self._cache.move_to_end(cid)
            return cached
        for attempt in range(_RETRIES):
            try:
                read = await self._read_trees(record)
                break
            except LookupError:
                # A concurrent save or delete released entries this revision reached: read it again.
                current = await self._record(cid)
                if attempt == _RETRIES - 1 or current is None or current.revision == record.revision:
                    raise
                record = current
        else:  # pragma: no cover - the loop breaks or raises
            raise AssertionError('unreachable')
        if self._max_cached:
            self._cache[cid] = read
            self._cache.move_to_end(cid)
            while len(self._cache) > self._max_cached:
                self._cache.popitem(last=False)
        return read

    async def _read_trees(self, record: ConversationRecord) -> _Read:
        cid = record.conversation_id
        live = await self._store.read_history(record.head_id)
        seen = {entry.id for entry in live}
        lines: list[tuple[str, dict[str, str], list[ConversationEntry]]] = [
            (live_run_id(cid), {'history': 'live'}, live)
        ]
        if self._branches:
            for tip in reversed(record.branches):
                line = await self._store.read_history(tip)
                shared = 0
                while shared < len(line) and line[shared].id in seen:
                    shared += 1  # what a branch shares with a searched history is a prefix of it
                own = line[shared:]
                if own:
                    seen.update(entry.id for entry in own)
                    metadata = {'history': 'branch', 'tip': tip}
                    lines.append((branch_run_id(cid, tip), metadata, own))
        return _Read(_version(record), tuple(self._history(cid, *line) for line in lines))

    def _history(
        self, conversation_id: str, run_id: str, metadata: dict[str, str], entries: Sequence[ConversationEntry]
    ) -> RunHistory:
        messages: list[ModelMessage] = []
        for entry in entries:
            message = record_view(entry.message)
            if message is not None:
                messages.append(message)
        ids = tuple(entry.id for entry in entries)
        held = self._versions.get(run_id)
        version = 0 if held is None else held[1] if held[0] == ids else held[1] + 1
        self._versions[run_id] = (ids, version)
        self._owners[run_id] = conversation_id
        run = RunRecord(
            run_id=run_id,
            conversation_id=conversation_id,
            metadata=metadata,
            started_at=_started_at(messages),
            token=conversation_id,
        )
        return RunHistory(run=run, messages=messages, hashes=message_hashes(messages), version=version)


def _version(record: ConversationRecord) -> tuple[str, str | None, tuple[str, ...]]:
    """What a cached read of the conversation is valid for (see `_Read.revision`)."""
    return (record.revision, record.head_id, tuple(record.branches))


def _started_at(messages: Sequence[ModelMessage]) -> datetime:
    """The time of the run's first message that has one: stable while the history only grows."""
    for message in messages:
        if message.timestamp is not None:
            return message.timestamp.astimezone(UTC)
    return _EPOCH
