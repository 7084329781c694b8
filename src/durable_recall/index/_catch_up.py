"""Catch-up: turn what changed in a run's record since it was last indexed into one commit.

A record feed (`_feed`) says what changed: for a store, the snapshots saved since the run's index
row, folded from the builder state the row keeps. Each record message is tokenized once: when it is
appended, or again only if a different stored copy replaces it with different text. Runs are
caught up in batches, each one transaction; two processes catching up the same run race on its
`seen` watermark and the loser reads again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..base import CorruptRunError, CorruptSnapshotError, RunRecord, format_timestamp
from ..text import index_text, tokenize
from ._chunks import decode_chunk, run_postings
from ._feed import RecordFeed, RecordView, SnapshotFeed
from ._layout import encode_floats, encode_ints
from ._reader import IndexRowsWithRecords, SnapshotReader
from ._run_arrays import RunArrays, own_documents, put_position
from ._storage import IndexedRunRow, IndexStorage, Posting, RunCommit, StaleIndexError
from ._text_terms import text_terms

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = (
    'Indexer',
    'Progress',
    'Unreadable',
    'record_text_terms',
    'update_index',
)

Unreadable = CorruptSnapshotError | CorruptRunError
"""A run catch-up could not read: named in the search answer, retried on the next catch-up."""

Progress = Callable[[int, int], None]
"""Called as batches of runs are caught up, with the runs done so far and the runs to catch up in all."""


_RETRIES = 8

_BATCH_RUNS = 64
"""Runs caught up together, committed in one transaction."""

_BATCH_POSTINGS = 200_000
"""Postings after which a batch commits early (runs can be long): bounds what a batch holds in memory."""


def record_text_terms(message: ModelMessage) -> list[str]:
    """The terms a record message is indexed under (the search tool's own traffic excluded)."""
    return tokenize(index_text(message))


def hash_key(digest: str) -> bytes:
    """The stored form of a content hash for the inheritance check: its first 16 bytes."""
    return bytes.fromhex(digest)[:16]


class Indexer:
    """Brings an index up to date with its records, run by run, in batches of one transaction each."""

    def __init__(
        self, storage: IndexStorage, feed: RecordFeed, *, rows_with_records: IndexRowsWithRecords | None = None
    ) -> None:
        self._storage = storage
        self._rows_with_records = rows_with_records
        """The store, when it reads index rows with records in one read and `storage` is its own index."""
        self._known_held: dict[str, set[bytes]] = {}
        """Per conversation, hashes the index was found to hold (under `catch_up`): never asked twice."""
        self._feed = feed

    @classmethod
    def of_store(cls, store: SnapshotReader) -> Indexer:
        """The indexer of a store's own index, fed by its snapshots."""
        both = store if isinstance(store, IndexRowsWithRecords) else None
        return cls(store.index_storage(), SnapshotFeed(store), rows_with_records=both)

    @property
    def storage(self) -> IndexStorage:
        """The index port written to."""
        return self._storage

    async def catch_up(
        self, run_ids: Iterable[str], progress: Progress | None = None, *, upto: Mapping[str, int] | None = None
    ) -> list[Unreadable]:
        """Index what changed in these runs (oldest first, so inheritance sees earlier runs).

        Args:
            run_ids: The runs.
            progress: Called as batches commit.
            upto: Per run, the snapshot index a writer just saved: a run whose index has read
                it already is left alone (a retried save's catch-up commits nothing, and so
                moves no generation).

        Returns:
            The runs that could not be read; their index stays at what could, and they are
            retried on the next catch-up.
        """
        problems: list[Unreadable] = []
        ids = list(dict.fromkeys(run_ids))
        self._known_held = {}
        for start in range(0, len(ids), _BATCH_RUNS):
            batch = ids[start : start + _BATCH_RUNS]
            problems += await self._catch_up_batch(batch, upto or {})
            if progress is not None:
                progress(start + len(batch), len(ids))
        return problems

    async def _records(self, run_ids: list[str]) -> tuple[dict[str, RunRecord], list[Unreadable]]:
        try:
            return await self._feed.records(run_ids), []
        except CorruptRunError:
            pass
        records: dict[str, RunRecord] = {}
        problems: list[Unreadable] = []
        for run_id in run_ids:
            try:
                records.update(await self._feed.records([run_id]))
            except CorruptRunError as error:
                problems.append(error)
        return records, problems

    async def _read_both(self, run_ids: list[str]) -> tuple[dict[str, IndexedRunRow], dict[str, RunRecord]] | None:
        """Index rows and records in one read where the store offers it; `None` to read them apart."""
        if self._rows_with_records is None:
            return None
        try:
            return await self._rows_with_records.index_rows_with_records(run_ids)
        except CorruptRunError:
            return None  # read apart, so that the damaged run is named and the others caught up

    async def _catch_up_batch(self, run_ids: list[str], upto: Mapping[str, int]) -> list[Unreadable]:
        """Catch runs up together: their reads first, then one transaction for all their commits.

        One commit for many runs writes each term's open tail once for all of them, where a
        commit per run would write it once per run. A run that inherits from an earlier run of the
        batch finds that run's hashes here, since they are not committed yet. If another process
        indexed one of the runs meanwhile, the batch commits nothing and its runs are caught up
        one by one instead.
        """
        read = await self._read_both(run_ids)
        rows = read[0] if read is not None else await self._storage.load_runs(run_ids)
        run_ids = [run_id for run_id in run_ids if run_id not in upto or _behind(rows.get(run_id), upto[run_id])]
        if not run_ids:
            return []
        if read is not None:
            records, problems = {run_id: read[1][run_id] for run_id in run_ids if run_id in read[1]}, []
        else:
            records, problems = await self._records(run_ids)
        feed = self._feed if isinstance(self._feed, SnapshotFeed) else None
        if feed is not None:
            found = [run_id for run_id in run_ids if run_id in records]
            await feed.read_ahead({run_id: row.seen if (row := rows.get(run_id)) else -1 for run_id in found})
        try:
            return problems + await self._prepare_batch(run_ids, records, rows)
        finally:
            if feed is not None:
                feed.drop_ahead()

    async def _prepare_batch(
        self, run_ids: list[str], records: Mapping[str, RunRecord], rows: Mapping[str, IndexedRunRow]
    ) -> list[Unreadable]:
        """Prepare the batch's runs in order and commit them together (`_BATCH_POSTINGS` at a time)."""
        problems: list[Unreadable] = []
        pending: list[RunCommit] = []
        held: dict[str, dict[bytes, str]] = {}
        size = 0
        for run_id in run_ids:
            run = records.get(run_id)
            if run is None:
                continue
            try:
                change = await self._prepare(run, rows.get(run_id), held)
            except CorruptSnapshotError as error:
                problems.append(error)
                continue
            pending.append(change)
            if run.conversation_id is not None:
                mine = held.setdefault(run.conversation_id, {})
                for digest in change.hashes:
                    mine.setdefault(digest, run_id)
            size += sum(len(postings) for postings in change.postings_add.values())
            if size >= _BATCH_POSTINGS:
                problems += await self._commit(pending)
                pending, held, size = [], {}, 0
        if pending:
            problems += await self._commit(pending)
        return problems

    async def _commit(self, changes: list[RunCommit]) -> list[Unreadable]:
        try:
            await self._storage.commit_many(changes)
        except StaleIndexError:
            return await self._one_by_one([change.run_id for change in changes])
        return []

    async def _one_by_one(self, run_ids: list[str]) -> list[Unreadable]:
        problems: list[Unreadable] = []
        for run_id in run_ids:
            for attempt in range(_RETRIES):
                try:
                    await self._catch_up_run(run_id)
                    break
                except StaleIndexError:
                    if attempt == _RETRIES - 1:
                        raise
                except (CorruptSnapshotError, CorruptRunError) as error:
                    problems.append(error)
                    break
        return problems

    async def _catch_up_run(self, run_id: str) -> None:
        run = (await self._feed.records([run_id])).get(run_id)
        if run is None:
            return
        row = (await self._storage.load_runs([run_id])).get(run_id)
        await self._storage.commit_many([await self._prepare(run, row, {})])

    async def _prepare(
        self, run: RunRecord, row: IndexedRunRow | None, held: Mapping[str, Mapping[bytes, str]]
    ) -> RunCommit:
        """The run's catch-up from its index row: fold what changed, tokenize it.

        Args:
            run: The run's record.
            row: Its index row (`None` if never indexed).
            held: Hashes that runs of the same batch, not committed yet, will hold, per
                conversation: for the inheritance check.
        """
        folded = await self._feed.fold(run, row)
        record, changes = folded.record, folded.changes
        arrays = RunArrays.of(row)
        old_size = len(arrays.lengths)
        old_first = first = row.first if row is not None else 0
        old_own = own_documents(arrays, first)
        if run.conversation_id is not None and first == old_size and len(record) > old_size:
            first = await self._inherited_prefix(run, record, first, held.get(run.conversation_id, {}))
        replaced: dict[int, Counter[str]] = {}
        affected: set[str] = set()
        added: dict[str, list[Posting]] = {}
        hashes: list[bytes] = []
        for position in sorted(changes):
            message = record.message(position)
            if position < first:
                # Inherited: indexed under the run that persisted it first. A `run_id` search
                # reads these few messages back instead.
                put_position(arrays, position, 0, record.seq(position), message, run)
                continue
            terms = await text_terms(message)
            put_position(arrays, position, terms.total(), record.seq(position), message, run)
            if old_first <= position < old_size:
                previous = changes[position]
                before = await text_terms(previous) if previous is not None else Counter[str]()
                if before != terms:
                    replaced[position] = terms
                    affected.update(before, terms)
                continue
            hashes.append(hash_key(record.hash(position)))
            length = terms.total()
            for term, count in terms.items():
                added.setdefault(term, []).append((position, count, length))
        postings_set = await self._rewritten(run, row, affected, replaced, added) if replaced else {}
        for term in postings_set:
            added.pop(term, None)
        own = own_documents(arrays, first)
        return RunCommit(
            run_id=run.run_id,
            conversation_id=run.conversation_id,
            started_at=format_timestamp(run.started_at),
            expected_seen=row.seen if row is not None else -2,
            seen=folded.upto,
            upto=folded.upto,
            first=first,
            lengths=encode_ints(arrays.lengths),
            seqs=encode_ints(arrays.seqs),
            roles=encode_ints(arrays.roles),
            times=encode_floats(arrays.times),
            state=folded.state,
            postings_add=added,
            postings_set=postings_set,
            hashes=hashes,
            docs_delta=own[0] - old_own[0],
            length_delta=own[1] - old_own[1],
        )

    async def _inherited_prefix(
        self, run: RunRecord, record: RecordView, first: int, batch: Mapping[bytes, str]
    ) -> int:
        """Extend the run's inherited prefix over leading messages an earlier run of the conversation holds.

        Only the messages before the run's first own one (stamped with its token) can be
        inherited, and of those only hashes neither an earlier run of the batch holds nor an
        earlier question answered are asked of the index. A chat's run inherits a window that
        mostly overlaps the last run's, so most runs ask nothing. An answer can be reused for
        another run because a run whose prefix is still being extended holds no hashes of its own.

        The prefix ends after the *last* held message, not before the first one that is not held:
        a message inherited between held ones was persisted by the run that holds its neighbours,
        in another form (a tool result cleared in place, an edit), and that run indexed the
        original. Inherited messages after the last held one (history from runs that never
        persisted) are the run's own to index.
        """
        assert run.conversation_id is not None
        candidates: list[bytes] = []
        for position in range(first, len(record)):
            if record.message(position).run_id == run.token:
                break
            candidates.append(hash_key(record.hash(position)))
        known = self._known_held.setdefault(run.conversation_id, set())
        in_batch = {digest for digest in candidates if batch.get(digest, run.run_id) != run.run_id}
        unknown = [digest for digest in candidates if digest not in known and digest not in in_batch]
        if unknown:
            known.update(await self._storage.inherited(run.conversation_id, unknown, exclude_run_id=run.run_id))
        held = [index for index, digest in enumerate(candidates) if digest in known or digest in in_batch]
        return first + (held[-1] + 1 if held else 0)

    async def _rewritten(
        self,
        run: RunRecord,
        row: IndexedRunRow | None,
        terms: set[str],
        replaced: dict[int, Counter[str]],
        added: dict[str, list[Posting]],
    ) -> dict[str, list[Posting]]:
        """Whole new postings of the terms an earlier, re-indexed position had or has."""
        rows = await self._storage.postings(sorted(terms), run.conversation_id, all_scopes=run.conversation_id is None)
        run_key = row.run_key if row is not None else None
        out: dict[str, list[Posting]] = {}
        for term in terms:
            kept: dict[int, Posting] = {}
            if run_key is not None:
                chunks = [decode_chunk(found.chunk, found.postings) for found in rows.get(term, [])]
                kept.update((posting[0], posting) for posting in run_postings(chunks, run_key))
            for position, counts in replaced.items():
                kept.pop(position, None)
                if counts.get(term, 0):
                    kept[position] = (position, counts[term], counts.total())
            kept.update((entry[0], entry) for entry in added.get(term, []))
            out[term] = [kept[position] for position in sorted(kept)]
        return out


def _behind(row: IndexedRunRow | None, saved: int) -> bool:
    """Whether a run's index has not read the snapshot `saved` yet."""
    return row is None or row.seen < saved


async def update_index(
    store: SnapshotReader, conversation_id: str | None = None, *, progress: Progress | None = None
) -> list[Unreadable]:
    """Bring a store's search index up to date with its snapshots, now rather than at the next search.

    Searches catch the index up themselves, so this is never required; it moves the cost out of
    the first search after a large import or a batch of runs (a worker can call it after each
    run, or a job after an import).

    Args:
        store: The store `StepPersistence` writes to.
        conversation_id: Only this conversation's runs; `None` indexes every run in the store.
        progress: Called with the runs done and the runs in all, as batches commit.

    Returns:
        Errors for runs whose snapshots could not be read (their index stays at the last
        snapshot that could; a later catch-up retries them).
    """
    indexer = Indexer.of_store(store)
    status = await indexer.storage.status(conversation_id, all_scopes=conversation_id is None)
    return await indexer.catch_up(status.pending, progress)
