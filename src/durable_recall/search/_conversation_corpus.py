"""Our SQL conversation stores as a corpus: a persistent index in their own database, caught up from the entry log.

`ConversationStoreSource` over `SqliteConversationStore` or `PostgresConversationStore` is searched
through the step store's index layout kept in the conversation store's `drc_index_*` tables (see
`durable_recall.conversations`'s `EntryLog`), so a cold process answers from postings instead of
re-reading and re-tokenizing every conversation. The runs are exactly `ConversationStoreSource`'s
(the live history, and each branch holding messages of its own), so answers are the ones the
in-memory path (`SourceCorpus`) gives for the same data.

A refresh compares each conversation's revision with the one its runs were derived from:

* unchanged: nothing is read;
* the live history grew (its head descends from the one indexed, the branches are the same): its
  run is marked pending, and catch-up walks from the new head back to the one indexed (one query,
  ids only) and reads only the new entries;
* anything else (a rewrite, a new branch, a fork's first sight): the conversation's index is
  forgotten and its runs registered anew, in one transaction, then caught up whole. Postings can
  only be added or rewritten, never shortened, so this is how a history that shrank is re-indexed;
* gone from the store: forgotten (the stores' `delete` forgets it in its own transaction too).

Two processes may refresh the same conversation at once: its bookkeeping moves by compare-and-set
on the revision, and catch-up commits race on each run's watermark (`StaleIndexError`), so nothing
is indexed twice. A source with a `scope` searched with `scope='all'` needs statistics over that
`ConversationStore` scope only, which the index does not keep: that search uses the in-memory path.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic_ai.messages import ModelMessage

from ..base import CorruptSnapshotError, RunRecord
from ..conversations import (
    ConversationEntry,
    ConversationRecord,
    ConversationStoreSource,
    CorruptConversationError,
    EntryLog,
    IndexedConversation,
    LogRun,
    PostgresConversationStore,
    SqliteConversationStore,
)
from ..history import record_view
from ..index import Indexer, IndexStorage, Progress, ScopeStatus, Unreadable
from ._entry_feed import EntryFeed, decode_state, run_record
from ._shown import StoredMessage
from ._source_corpus import SourceCorpus

__all__ = ('ConversationCorpus', 'conversation_corpus')

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RETRIES = 5


def conversation_corpus(source: ConversationStoreSource) -> ConversationCorpus | None:
    """The persistent corpus for a source over one of our SQL stores (with branches); `None` for any other."""
    store = source.store
    if not source.branches:
        return None
    if isinstance(store, SqliteConversationStore):
        from ..stores.sqlite import SqliteIndex

        log = store.entry_log()
        return ConversationCorpus(source, log, SqliteIndex(log.connection, prefix='drc_'))
    if isinstance(store, PostgresConversationStore):
        from ..stores.postgres import PostgresIndex

        log = store.entry_log()
        return ConversationCorpus(source, log, PostgresIndex(log.connector))
    return None


class ConversationCorpus:
    """A SQL conversation store's persistent index, caught up from its entry log (see the module docstring)."""

    def __init__(self, source: ConversationStoreSource, log: EntryLog, storage: IndexStorage) -> None:
        self._source = source
        self.log = log
        self._storage = storage
        self._indexer = Indexer(storage, EntryFeed(self))
        self._fallback: SourceCorpus | None = None
        self._active: IndexStorage = storage
        self._bodies: dict[str, ConversationEntry] = {}
        self.stale: dict[str, str] = {}
        """Runs (to their conversations) a fold found changed under it: re-registered before the refresh returns."""

    @property
    def storage(self) -> IndexStorage:
        """The index the last refresh caught up (the in-memory one for a scoped source's `scope='all'`)."""
        return self._active

    async def refresh(
        self, conversation_id: str | None, *, all_scopes: bool, progress: Progress | None = None
    ) -> tuple[ScopeStatus, list[Unreadable]]:
        """Bring the scope's conversations' runs up to date, then catch their pending runs up."""
        if all_scopes and self._source.scope is not None:
            if self._fallback is None:
                self._fallback = SourceCorpus(self._source)
            self._active = self._fallback.storage
            result = await self._fallback.refresh(conversation_id, all_scopes=True, progress=progress)
            self._active = self._fallback.storage  # a rebuild replaces it
            return result
        self._active = self._storage
        store = self._source.store
        problems: list[Unreadable] = []
        try:
            # What the index holds first, then the store: a conversation created in between is not forgotten.
            if all_scopes:
                held = await self.log.indexed(None)
                records = list(await store.read_records())
                for gone in held.keys() - {record.conversation_id for record in records}:
                    await self.log.reset(gone, held[gone].revision, None, [])
            else:
                assert conversation_id is not None, 'a conversation-scoped search names its conversation'
                held = await self.log.indexed([conversation_id])
                record = await store.read_record(conversation_id)
                if record is None:
                    if conversation_id in held:
                        await self.log.reset(conversation_id, held[conversation_id].revision, None, [])
                    return ScopeStatus(generation='', pending=[], docs=0, length=0), []
                if self._source.scope is not None and record.scope != self._source.scope:
                    return ScopeStatus(generation='', pending=[], docs=0, length=0), []  # not this source's
                records = [record]
            for record in records:
                problems += await self._synced(record, held.get(record.conversation_id))
            status = await self._storage.status(conversation_id, all_scopes=all_scopes)
            if not status.pending:
                return status, problems
            problems += await self._indexer.catch_up(status.pending, progress)
            if self.stale:
                problems = [problem for problem in problems if problem.run_id not in self.stale]
                for cid in sorted(set(self.stale.values())):
                    current = await store.read_record(cid)
                    held = await self.log.indexed([cid])
                    if current is None:
                        if cid in held:
                            await self.log.reset(cid, held[cid].revision, None, [])
                    else:
                        problems += await self._synced(current, held.get(cid), force=True)
                self.stale.clear()
                status = await self._storage.status(conversation_id, all_scopes=all_scopes)
                problems += await self._indexer.catch_up(status.pending, progress)
            return await self._storage.status(conversation_id, all_scopes=all_scopes), problems
        finally:
            self._bodies = {}
            self.stale.clear()

    async def _synced(
        self, record: ConversationRecord, held: IndexedConversation | None, *, force: bool = False
    ) -> list[Unreadable]:
        """`_sync`, with a conversation whose entries do not read named instead of raised (it stays unindexed)."""
        try:
            await self._sync(record, held, force=force)
        except CorruptConversationError as error:
            return [CorruptSnapshotError(record.conversation_id, -1, str(error))]
        return []

    async def _sync(self, record: ConversationRecord, held: IndexedConversation | None, *, force: bool = False) -> None:
        """Make the index's runs of one conversation match its record (see the module docstring)."""
        cid = record.conversation_id
        current: ConversationRecord | None = record
        if held is not None and not await self._current_ids(cid):
            force = True  # indexed under the run ids of an earlier version: registered again
        for _ in range(_RETRIES):
            if current is None:
                if held is None or await self.log.reset(cid, held.revision, None, []):
                    return
            elif held is not None and held.revision == current.revision and not force:
                return
            else:
                try:
                    if await self._move(current, held, force=force):
                        return
                except KeyError:
                    pass  # a concurrent save or delete released entries this revision reached
            # Another process moved it first: read both again and go from there.
            current = await self._source.store.read_record(cid)
            held = (await self.log.indexed([cid])).get(cid)
            force = False
        raise RuntimeError(f'conversation {cid!r} kept changing while its search index was updated; retry the search')

    async def _move(self, record: ConversationRecord, held: IndexedConversation | None, *, force: bool) -> bool:
        cid, tips = record.conversation_id, tuple(record.branches)
        if held is not None and not force and held.tips == tips and held.timed and held.head and record.head_id:
            new = await self.log.walk(record.head_id, held.head)
            if new is not None:
                now = IndexedConversation(
                    revision=record.revision, head=record.head_id, depth=held.depth + len(new), tips=tips, timed=True
                )
                return await self.log.advance(cid, held.revision, now)
        runs, timed, depth = await self._derive(record)
        await self._evict_squatters(cid, [run.run_id for run in runs])
        now = IndexedConversation(revision=record.revision, head=record.head_id, depth=depth, tips=tips, timed=timed)
        return await self.log.reset(cid, None if held is None else held.revision, now, runs)

    async def _current_ids(self, cid: str) -> bool:
        """Whether the index holds the conversation under today's run ids (one query, only for an escaped id).

        Run ids were `'<id>#branch:<tip>'` for every id before `live_run_id` escaped the ids that
        could pass for another conversation's branch: such a conversation indexed then is
        registered again.
        """
        live = self._source.live_run_id(cid)
        if live == cid:
            return True
        found = (await self.log.runs([live])).get(live)
        return found is not None and found.conversation_id == cid

    async def _evict_squatters(self, cid: str, run_ids: Sequence[str]) -> None:
        """Forget any other conversation indexed under one of these run ids (by the old run id format).

        Today's run ids never collide across conversations, so such a row is another conversation's,
        registered before the format changed (`B#branch:<tip>` as a conversation id): it is forgotten,
        to be registered again under its own escaped ids when it is next searched.
        """
        others = {run.conversation_id for run in (await self.log.runs(list(run_ids))).values()} - {cid}
        for other in sorted(others):
            held = (await self.log.indexed([other])).get(other)
            if held is not None:
                await self.log.reset(other, held.revision, None, [])

    async def _derive(self, record: ConversationRecord) -> tuple[list[LogRun], bool, int]:
        """The runs as `ConversationStoreSource` maps them; whether the live run has a start; its depth."""
        cid = record.conversation_id
        live = await self.log.line(record.head_id) if record.head_id is not None else []
        seen = set(live)
        lines: list[tuple[str, dict[str, str], str | None, int, list[str]]] = [
            (self._source.live_run_id(cid), {'history': 'live'}, record.head_id, 0, live)
        ]
        for tip in reversed(record.branches):
            line = await self.log.line(tip)
            shared = 0
            while shared < len(line) and line[shared] in seen:
                shared += 1
            own = line[shared:]
            if own:
                seen.update(own)
                lines.append(
                    (self._source.branch_run_id(cid, tip), {'history': 'branch', 'tip': tip}, tip, shared, own)
                )
        bodies = await self.log.entries([entry_id for *_, own in lines for entry_id in own])
        self._bodies.update(bodies)
        runs: list[LogRun] = []
        timed = False
        token = f'{cid}#{uuid.uuid4().hex}'
        for run_id, metadata, head, skip, own in lines:
            started = _started_at(bodies, own)
            timed = timed or (metadata['history'] == 'live' and started is not None)
            runs.append(
                LogRun(
                    run_id=run_id,
                    conversation_id=cid,
                    scope=record.scope,
                    started_at=started or _EPOCH,
                    metadata=metadata,
                    head=head,
                    skip=skip,
                    upto=skip + len(own),
                    token=token,
                )
            )
        return runs, timed, len(live)

    async def line(self, run: LogRun) -> list[str]:
        """The run's own entry ids (its line from `skip` on)."""
        return [] if run.head is None else (await self.log.line(run.head))[run.skip :]

    async def messages(self, entry_ids: Sequence[str], start: int) -> tuple[list[str], dict[int, ModelMessage]]:
        """The entries' searchable messages by position from `start`, with the ids kept (artifacts stripped)."""
        wanted = [entry_id for entry_id in entry_ids if entry_id not in self._bodies]
        bodies = {**self._bodies, **(await self.log.entries(wanted) if wanted else {})}
        kept: list[str] = []
        messages: dict[int, ModelMessage] = {}
        for entry_id in entry_ids:
            entry = bodies.get(entry_id)
            if entry is None:
                raise KeyError(entry_id)
            message = record_view(entry.message)
            if message is not None:
                messages[start + len(kept)] = message
                kept.append(entry_id)
        return kept, messages

    async def log_runs(self, run_ids: Sequence[str]) -> dict[str, LogRun]:
        """The index's runs that belong to the source (its `ConversationStore` scope)."""
        scope = self._source.scope
        return {
            run_id: run for run_id, run in (await self.log.runs(run_ids)).items() if scope is None or run.scope == scope
        }

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """Run records by id, as `ConversationStoreSource` gives them."""
        if self._active is not self._storage and self._fallback is not None:
            return await self._fallback.get_runs(run_ids)
        return {run_id: run_record(run) for run_id, run in (await self.log_runs(run_ids)).items()}

    async def read_stored(self, wanted: Mapping[str, Sequence[int]]) -> Mapping[str, Mapping[int, StoredMessage]]:
        """The messages as `read_logs` gives them: this corpus holds them decoded."""
        return await self.read_logs(wanted)

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        """Messages by run and position: entry ids from the runs' index states, bodies in one read."""
        if self._active is not self._storage and self._fallback is not None:
            return await self._fallback.read_logs(wanted)
        rows = await self._storage.load_runs(list(wanted))
        by_run: dict[str, dict[int, str]] = {}
        for run_id, seqs in wanted.items():
            row = rows.get(run_id)
            if row is None or not row.state:
                continue
            _, _, ids = decode_state(run_id, row)
            by_run[run_id] = {seq: ids[seq] for seq in seqs if 0 <= seq < len(ids)}
        bodies = await self.log.entries([entry_id for ids in by_run.values() for entry_id in ids.values()])
        out: dict[str, dict[int, ModelMessage]] = {}
        for run_id, ids in by_run.items():
            for seq, entry_id in ids.items():
                entry = bodies.get(entry_id)
                message = None if entry is None else record_view(entry.message)
                if message is not None:
                    out.setdefault(run_id, {})[seq] = message
        return out


def _started_at(bodies: Mapping[str, ConversationEntry], ids: Sequence[str]) -> datetime | None:
    """The time of the first message of these entries that has one (as `ConversationStoreSource` takes it)."""
    for entry_id in ids:
        message = record_view(bodies[entry_id].message)
        if message is not None and message.timestamp is not None:
            return message.timestamp.astimezone(UTC)
    return None
