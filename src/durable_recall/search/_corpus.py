"""The engine's one corpus seam: an index port, a way to catch it up, and reads of what an answer shows.

`StoreCorpus` is a store's own persistent index, caught up from its snapshots. Any other
`HistorySource` feeds the same engine through `SourceCorpus` (`_source_corpus`), an in-memory index
behind the same port, so both rank, filter and render through the very same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from pydantic_ai.messages import ModelMessage

from ..base import RunRecord
from ..index import (
    IndexedRunRow,
    Indexer,
    IndexStorage,
    Progress,
    ScopeStatus,
    ScopeView,
    ScopeViews,
    SpansWanted,
    Unreadable,
)
from ..stores import LogBodies, StepStore
from ._shown import StoredMessage

__all__ = ('Corpus', 'RowsWithRecords', 'StoreCorpus', 'ViewingCorpus')


class Corpus(Protocol):
    """What the search engine reads: an index, kept current, and the records and messages it names."""

    @property
    def storage(self) -> IndexStorage:
        """The index port (statistics, postings, run rows)."""
        ...

    async def refresh(
        self, conversation_id: str | None, *, all_scopes: bool, progress: Progress | None = None
    ) -> tuple[ScopeStatus, list[Unreadable]]:
        """Catch the scope's index up with its history; the scope's status after, and what did not read."""
        ...

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """Run records by id (runs gone are left out).

        Raises:
            CorruptRunError: A run row does not read.
        """
        ...

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        """Messages by run and log number (the `seqs` of the index's run rows)."""
        ...

    async def read_stored(self, wanted: Mapping[str, Sequence[int]]) -> Mapping[str, Mapping[int, StoredMessage]]:
        """`read_logs` for display: each entry as its stored JSON text where the corpus has it, else the message.

        Raises:
            CorruptSnapshotError: A body is missing or does not decode.
        """
        ...


@runtime_checkable
class ViewingCorpus(Protocol):
    """A corpus that can read a search's status, postings and spans in one round trip (see `_prefetch`)."""

    async def view(
        self,
        conversation_id: str | None,
        *,
        all_scopes: bool,
        terms: Sequence[str],
        known: str | None,
        known_terms: Sequence[str],
        spans: SpansWanted,
    ) -> ScopeView | None:
        """`ScopeViews.view` of its index, or `None` when this index cannot read one."""
        ...

    async def catch_up(self, run_ids: Sequence[str], progress: Progress | None = None) -> list[Unreadable]:
        """Index what changed in these runs (`Indexer.catch_up`); what did not read."""
        ...

    async def rows_with_records(
        self, run_keys: Sequence[int]
    ) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]] | None:
        """Index rows by key with their runs' records in one read, or `None` when the store cannot.

        Raises:
            CorruptRunError: A run row does not read.
        """
        ...


@runtime_checkable
class RowsWithRecords(Protocol):
    """A store that reads index rows with their runs' records in one statement (the Postgres step store)."""

    async def indexed_runs_with_records(
        self, run_keys: Sequence[int]
    ) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]]:
        """Index rows by run key, and the records of their runs (a run deleted meanwhile has none)."""
        ...


class StoreCorpus:
    """A store's persistent index, caught up from the snapshots saved since each run was indexed."""

    def __init__(self, store: StepStore) -> None:
        self._store = store
        self._bodies = store if isinstance(store, LogBodies) else None
        self._indexer = Indexer.of_store(store)
        storage = self._indexer.storage
        self._views = storage if isinstance(storage, ScopeViews) else None
        self._with_records = store if isinstance(store, RowsWithRecords) else None

    @property
    def storage(self) -> IndexStorage:
        """The store's index tables."""
        return self._indexer.storage

    async def refresh(
        self, conversation_id: str | None, *, all_scopes: bool, progress: Progress | None = None
    ) -> tuple[ScopeStatus, list[Unreadable]]:
        """One status read when nothing is pending; else catch the pending runs up and read it again."""
        status = await self.storage.status(conversation_id, all_scopes=all_scopes)
        if not status.pending:
            return status, []
        problems = await self._indexer.catch_up(status.pending, progress)
        return await self.storage.status(conversation_id, all_scopes=all_scopes), problems

    async def catch_up(self, run_ids: Sequence[str], progress: Progress | None = None) -> list[Unreadable]:
        """Index what changed in these runs; what did not read."""
        return await self._indexer.catch_up(run_ids, progress)

    async def view(
        self,
        conversation_id: str | None,
        *,
        all_scopes: bool,
        terms: Sequence[str],
        known: str | None,
        known_terms: Sequence[str],
        spans: SpansWanted,
    ) -> ScopeView | None:
        """The index's view (`ScopeViews`), where it reads one."""
        if self._views is None:
            return None
        return await self._views.view(
            conversation_id, all_scopes=all_scopes, terms=terms, known=known, known_terms=known_terms, spans=spans
        )

    async def rows_with_records(
        self, run_keys: Sequence[int]
    ) -> tuple[dict[int, IndexedRunRow], dict[str, RunRecord]] | None:
        """Index rows with their records in one read, where the store reads them so (`RowsWithRecords`)."""
        if self._with_records is None:
            return None
        return await self._with_records.indexed_runs_with_records(run_keys)

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The store's run records."""
        return await self._store.get_runs(run_ids)

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        """The store's log entries."""
        return await self._store.read_logs(wanted)

    async def read_stored(self, wanted: Mapping[str, Sequence[int]]) -> Mapping[str, Mapping[int, StoredMessage]]:
        """The store's log entries as JSON text, when the store can read them so (`LogBodies`)."""
        if self._bodies is not None:
            return await self._bodies.read_log_bodies(wanted)
        return await self._store.read_logs(wanted)
