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

import json
import uuid
import zlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pydantic_ai.messages import ModelMessage

from ..base import CorruptSnapshotError, RunRecord
from ..conversations import (
    ConversationEntry,
    ConversationRecord,
    ConversationStoreSource,
    EntryLog,
    IndexedConversation,
    LogRun,
    PostgresConversationStore,
    SqliteConversationStore,
)
from ..history import message_hashes, strip_artifacts
from ..index import Folded, IndexedRunRow, Indexer, IndexStorage, Progress, ScopeStatus, Unreadable
from ._source_corpus import SourceCorpus

__all__ = ('ConversationCorpus', 'conversation_corpus')

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_BRANCH = '#branch:'
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


class _View:
    """A run's record as catch-up reads it: its length, and the messages new since the index row."""

    def __init__(self, size: int, messages: Mapping[int, ModelMessage]) -> None:
        self._size = size
        self._messages = messages
        positions = sorted(messages)
        self._hashes = dict(zip(positions, message_hashes([messages[p] for p in positions]), strict=True))

    def __len__(self) -> int:
        return self._size

    def message(self, position: int) -> ModelMessage:
        return self._messages[position]

    def hash(self, position: int) -> str:
        return self._hashes[position]

    def seq(self, position: int) -> int:
        return position  # a run's entry ids by position are in its index state


def _encode_state(head: str | None, depth: int, ids: Sequence[str]) -> bytes:
    return zlib.compress(json.dumps({'head': head, 'depth': depth, 'ids': list(ids)}).encode())


def _decode_state(run_id: str, row: IndexedRunRow) -> tuple[str | None, int, list[str]]:
    try:
        state = json.loads(zlib.decompress(row.state))
        return state['head'], int(state['depth']), [str(entry_id) for entry_id in state['ids']]
    except (ValueError, KeyError, TypeError, zlib.error) as error:
        raise CorruptSnapshotError(run_id, row.seen, f'the index state does not read ({error})') from error


class _Feed:
    """Catch-up's record feed: each run's entries since its index row, from the entry log."""

    def __init__(self, corpus: ConversationCorpus) -> None:
        self._corpus = corpus

    async def records(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        return {run_id: _record(run) for run_id, run in (await self._corpus.log_runs(run_ids)).items()}

    async def fold(self, run: RunRecord, row: IndexedRunRow | None) -> Folded:
        corpus = self._corpus
        found = (await corpus.log.runs([run.run_id])).get(run.run_id)  # read after the row: never older than it
        if found is None:
            raise CorruptSnapshotError(run.run_id, -1, 'the conversation changed while it was indexed')
        if row is None or not row.state:
            ids = await corpus.line(found)
            kept, messages = await corpus.messages(ids, 0)
            state = _encode_state(found.head, found.skip + len(ids), kept)
            return Folded(_View(len(kept), messages), dict.fromkeys(messages), found.skip + len(ids), state)
        head, depth, kept = _decode_state(run.run_id, row)
        if head == found.head:
            return Folded(_View(len(kept), {}), {}, row.seen, row.state)
        new = await corpus.log.walk(found.head, head) if head is not None and found.head is not None else None
        if new is None:
            corpus.stale.add(run.conversation_id or '')
            raise CorruptSnapshotError(run.run_id, row.seen, 'the conversation was rewritten while it was indexed')
        added, messages = await corpus.messages(new, len(kept))
        kept += added
        state = _encode_state(found.head, depth + len(new), kept)
        return Folded(_View(len(kept), messages), dict.fromkeys(messages), depth + len(new), state)


def _record(run: LogRun) -> RunRecord:
    """The run record `ConversationStoreSource` gives for the same run, but for its token.

    The token names the registration: the index's log numbers are positions, and a process that
    cached a message of position 7 before a rewrite must not show it for the new position 7.
    """
    return RunRecord(
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        metadata=dict(run.metadata),
        started_at=run.started_at,
        token=run.token,  # as the source's (the conversation id) to the engine, but new per registration
    )


class ConversationCorpus:
    """A SQL conversation store's persistent index, caught up from its entry log (see the module docstring)."""

    def __init__(self, source: ConversationStoreSource, log: EntryLog, storage: IndexStorage) -> None:
        self._source = source
        self.log = log
        self._storage = storage
        self._indexer = Indexer(storage, _Feed(self))
        self._fallback: SourceCorpus | None = None
        self._active: IndexStorage = storage
        self._bodies: dict[str, ConversationEntry] = {}
        self.stale: set[str] = set()
        """Conversations a fold found rewritten under it: re-registered before the refresh returns."""

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
        try:
            if all_scopes:
                records = list(await store.read_records())
                held = await self.log.indexed(None)
                for gone in held.keys() - {record.conversation_id for record in records}:
                    await self.log.reset(gone, held[gone].revision, None, [])
            else:
                assert conversation_id is not None, 'a conversation-scoped search names its conversation'
                record = await store.read_record(conversation_id)
                held = await self.log.indexed([conversation_id])
                if record is None:
                    if conversation_id in held:
                        await self.log.reset(conversation_id, held[conversation_id].revision, None, [])
                    return ScopeStatus(generation='', pending=[], docs=0, length=0), []
                if self._source.scope is not None and record.scope != self._source.scope:
                    return ScopeStatus(generation='', pending=[], docs=0, length=0), []  # not this source's
                records = [record]
            for record in records:
                await self._sync(record, held.get(record.conversation_id))
            status = await self._storage.status(conversation_id, all_scopes=all_scopes)
            if not status.pending:
                return status, []
            problems = await self._indexer.catch_up(status.pending, progress)
            if self.stale:
                problems = [problem for problem in problems if _conversation(problem) not in self.stale]
                for cid in sorted(self.stale):
                    current = await store.read_record(cid)
                    if current is not None:
                        await self._sync(current, None, force=True)
                self.stale.clear()
                status = await self._storage.status(conversation_id, all_scopes=all_scopes)
                problems += await self._indexer.catch_up(status.pending, progress)
            return await self._storage.status(conversation_id, all_scopes=all_scopes), problems
        finally:
            self._bodies = {}

    async def _sync(self, record: ConversationRecord, held: IndexedConversation | None, *, force: bool = False) -> None:
        """Make the index's runs of one conversation match its record (see the module docstring)."""
        cid = record.conversation_id
        current: ConversationRecord | None = record
        for _ in range(_RETRIES):
            if current is None:
                if held is not None and await self.log.reset(cid, held.revision, None, []):
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
        now = IndexedConversation(revision=record.revision, head=record.head_id, depth=depth, tips=tips, timed=timed)
        return await self.log.reset(cid, None if held is None else held.revision, now, runs)

    async def _derive(self, record: ConversationRecord) -> tuple[list[LogRun], bool, int]:
        """The runs as `ConversationStoreSource` maps them; whether the live run has a start; its depth."""
        cid = record.conversation_id
        live = await self.log.line(record.head_id) if record.head_id is not None else []
        seen = set(live)
        lines: list[tuple[str, dict[str, str], str | None, int, list[str]]] = [
            (cid, {'history': 'live'}, record.head_id, 0, live)
        ]
        for tip in reversed(record.branches):
            line = await self.log.line(tip)
            shared = 0
            while shared < len(line) and line[shared] in seen:
                shared += 1
            own = line[shared:]
            if own:
                seen.update(own)
                lines.append((f'{cid}{_BRANCH}{tip}', {'history': 'branch', 'tip': tip}, tip, shared, own))
        bodies = await self.log.entries([entry_id for *_, own in lines for entry_id in own])
        self._bodies.update(bodies)
        runs: list[LogRun] = []
        timed = False
        token = f'{cid}#{uuid.uuid4().hex}'
        for run_id, metadata, head, skip, own in lines:
            started = _started_at(bodies, own)
            timed = timed or (run_id == cid and started is not None)
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
            message = strip_artifacts(entry.message)
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
        return {run_id: _record(run) for run_id, run in (await self.log_runs(run_ids)).items()}

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
            _, _, ids = _decode_state(run_id, row)
            by_run[run_id] = {seq: ids[seq] for seq in seqs if 0 <= seq < len(ids)}
        bodies = await self.log.entries([entry_id for ids in by_run.values() for entry_id in ids.values()])
        out: dict[str, dict[int, ModelMessage]] = {}
        for run_id, ids in by_run.items():
            for seq, entry_id in ids.items():
                entry = bodies.get(entry_id)
                message = None if entry is None else strip_artifacts(entry.message)
                if message is not None:
                    out.setdefault(run_id, {})[seq] = message
        return out


def _started_at(bodies: Mapping[str, ConversationEntry], ids: Sequence[str]) -> datetime | None:
    """The time of the first message of these entries that has one (as `ConversationStoreSource` takes it)."""
    for entry_id in ids:
        message = strip_artifacts(bodies[entry_id].message)
        if message is not None and message.timestamp is not None:
            return message.timestamp.astimezone(UTC)
    return None


def _conversation(problem: Unreadable) -> str:
    run_id = getattr(problem, 'run_id', '')
    return str(run_id).split(_BRANCH, 1)[0]
