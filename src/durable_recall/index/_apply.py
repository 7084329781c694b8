"""Applying catch-ups to a store's index: the algorithm once, over a narrow port each store implements.

Every store keeps the same index (see `_storage`) and must change it the same way: the stale
check, the scope's statistics and generations, the run row, taking a run's postings of a term out
of every chunk before it is re-added, appending to open tails and sealing the full ones, the
inheritance hashes and the pending marks. Written once per store, the three copies drifted; here
the steps are written once, and a store supplies only primitive reads and writes
([`IndexWriter`][durable_recall.index.IndexWriter]) inside one transaction of its own.

The port's methods are `async` so that a store whose driver awaits (Postgres) can implement them
directly; a store that runs synchronously (SQLite in a worker thread, the in-memory dictionaries)
implements them as coroutines that never suspend and drives `apply_commits` with
[`run_inline`][durable_recall.index.run_inline].
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol

from ._chunks import OPEN, SEAL_BYTES, appended_postings, seal_tail, without_run
from ._storage import RunCommit, StaleIndexError

__all__ = ('FullTail', 'IndexWriter', 'StoredRun', 'TermChunk', 'apply_commits')


@dataclass(frozen=True)
class StoredRun:
    """A run as the store holds it when a commit starts, read under the commit's locks.

    Attributes:
        conversation_id: The run's conversation as the store's runs table has it (its pending
            mark is filed under it).
        run_key: The run's index key, or `None` if the run was never indexed.
        seen: The run's indexed `seen`, or `None` if the run was never indexed.
    """

    conversation_id: str | None
    run_key: int | None
    seen: int | None


class TermChunk(NamedTuple):
    """One stored chunk of a term's postings in a scope."""

    term: str
    chunk: int
    postings: bytes


class FullTail(NamedTuple):
    """An open tail that reached the sealing size, with the highest chunk number its term has in the scope."""

    scope_key: int
    term: str
    postings: bytes
    last_chunk: int


class IndexWriter(Protocol):
    """A store's index tables inside one write transaction: the primitives `apply_commits` needs.

    A port is made for one transaction and dropped with it; nothing here commits or rolls back.
    """

    async def stored_run(self, run_id: str) -> StoredRun | None:
        """The run's conversation and index key and `seen`, or `None` when the store no longer has the run.

        A store that serialises commits with row locks takes the run's lock here.
        """
        ...

    async def update_scope(self, conversation_id: str | None, *, docs: int, length: int, generation: str) -> int:
        """Add `docs` and `length` to the conversation's scope row and set its generation; the scope key.

        The row is created first if the conversation has none (key 0 for `None`).
        """
        ...

    async def put_run(self, change: RunCommit, scope_key: int, run_key: int | None) -> int:
        """Write the run's index row from `change` (inserted when `run_key` is `None`); the run key."""
        ...

    async def chunks(self, scope_key: int, terms: Sequence[str]) -> list[TermChunk]:
        """Every chunk of these terms in the scope (locked for update where the store locks rows)."""
        ...

    async def set_chunk(self, scope_key: int, term: str, chunk: int, postings: bytes) -> None:
        """Replace a stored chunk's postings."""
        ...

    async def delete_chunk(self, scope_key: int, term: str, chunk: int) -> None:
        """Delete a stored chunk."""
        ...

    async def append_tails(self, tails: Sequence[tuple[int, str, bytes]], *, full_at: int) -> list[FullTail]:
        """Append to each `(scope key, term, postings)`'s open tail, creating it if needed.

        Args:
            tails: In key order, each key once: an ordered write lands next to the last one.
            full_at: The size from which a tail is due for sealing.

        Returns:
            The appended tails that now hold at least `full_at` bytes, whole.
        """
        ...

    async def seal_tails(self, sealed: Sequence[tuple[int, str, int, bytes]], tails: Sequence[tuple[int, str]]) -> None:
        """Insert the `(scope key, term, chunk, postings)` chunks, then delete the open tails of `tails`."""
        ...

    async def add_hashes(self, scope_key: int, run_key: int, hashes: Sequence[bytes]) -> None:
        """Record that the run holds these content hashes; a hash already held keeps its first run."""
        ...

    async def clear_pending(self, conversation_id: str | None, run_id: str, upto: int) -> None:
        """Clear the run's pending mark if it names no snapshot after `upto`."""
        ...

    async def bump_generation(self, generation: str) -> None:
        """Set the store-wide index generation (what `status(all_scopes=True)` reports)."""
        ...


async def apply_commits(writer: IndexWriter, changes: Sequence[RunCommit]) -> None:
    """Apply runs' catch-ups, in order, through `writer` (inside the caller's transaction).

    A change whose run the store no longer has is skipped (deleted while it was being indexed).
    Every change is checked before anything is written, so a `StaleIndexError` leaves nothing
    applied even where there is no transaction to roll back; a store whose port never suspends
    is then atomic without one. Each term's new postings of all the runs are appended to its
    open tail in one write, and tails that fill up are sealed once, at the end.

    Raises:
        StaleIndexError: A run's stored `seen` is not its change's `expected_seen`.
    """
    checked = await _checked(writer, changes)
    appended: dict[tuple[int, str], bytes] = {}
    run_keys: dict[str, int] = {}
    for change, stored in checked:
        scope_key = await writer.update_scope(
            change.conversation_id, docs=change.docs_delta, length=change.length_delta, generation=uuid.uuid4().hex
        )
        run_key = await writer.put_run(change, scope_key, run_keys.get(change.run_id, stored.run_key))
        run_keys[change.run_id] = run_key
        await _take_out(writer, change, scope_key, run_key, appended)
        for term, data in appended_postings(change, run_key):
            appended[scope_key, term] = appended.get((scope_key, term), b'') + data
        if change.conversation_id is not None and change.hashes:
            await writer.add_hashes(scope_key, run_key, change.hashes)
        await writer.clear_pending(stored.conversation_id, change.run_id, change.upto)
    await _append(writer, appended)
    if checked:
        await writer.bump_generation(uuid.uuid4().hex)


async def _checked(writer: IndexWriter, changes: Sequence[RunCommit]) -> list[tuple[RunCommit, StoredRun]]:
    """The changes whose runs are still stored, each with its run, after checking every one against `seen`.

    A run changed twice in one batch is checked the second time against the first change's `seen`.
    """
    runs: dict[str, StoredRun | None] = {}
    checked: list[tuple[RunCommit, StoredRun]] = []
    for change in changes:
        if change.run_id not in runs:
            runs[change.run_id] = await writer.stored_run(change.run_id)
        stored = runs[change.run_id]
        if stored is None:
            continue
        if (-2 if stored.seen is None else stored.seen) != change.expected_seen:
            raise StaleIndexError(change.run_id)
        checked.append((change, stored))
        runs[change.run_id] = replace(stored, seen=change.seen)
    return checked


async def _take_out(
    writer: IndexWriter, change: RunCommit, scope_key: int, run_key: int, appended: dict[tuple[int, str], bytes]
) -> None:
    """Take the run's postings of its `postings_set` terms out of every chunk holding them.

    Also out of what the batch is about to append, in case an earlier change of the batch was
    for the same run.
    """
    if not change.postings_set:
        return
    for term in change.postings_set:
        pending = appended.get((scope_key, term))
        kept = None if pending is None else without_run(OPEN, pending, run_key)
        if kept:
            appended[scope_key, term] = kept
        elif kept is not None:
            del appended[scope_key, term]
    for term, number, data in await writer.chunks(scope_key, list(change.postings_set)):
        kept = without_run(number, data, run_key)
        if kept is None:
            continue
        if kept:
            await writer.set_chunk(scope_key, term, number, kept)
        else:
            await writer.delete_chunk(scope_key, term, number)


async def _append(writer: IndexWriter, appended: dict[tuple[int, str], bytes]) -> None:
    """Append to each `(scope key, term)`'s open tail, in key order, then seal the tails that are full."""
    if not appended:
        return
    full = await writer.append_tails(
        [(scope_key, term, data) for (scope_key, term), data in sorted(appended.items())], full_at=SEAL_BYTES
    )
    if not full:
        return
    sealed = [
        (tail.scope_key, tail.term, tail.last_chunk + 1 + n, chunk)
        for tail in full
        for n, chunk in enumerate(seal_tail(tail.postings))
    ]
    await writer.seal_tails(sealed, [(tail.scope_key, tail.term) for tail in full])
