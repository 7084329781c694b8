"""What catch-up reads from a store: run records, snapshots since a watermark, log entries, the index port.

Declared here, below the stores, so that the index depends on no store: every `StepStore` is a
`SnapshotReader`.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..base import RunRecord, Snapshot
from ._storage import IndexedRunRow, IndexStorage

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('IndexRowsWithRecords', 'Listing', 'SharingReader', 'SnapshotReader')


@runtime_checkable
class SnapshotReader(Protocol):
    """The reading half of a store, as the index's catch-up and the search engine use it."""

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run's record, or `None` if it was never registered."""
        ...

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """Several runs' records in one read (run ids never registered are left out)."""
        ...

    async def list_snapshots(
        self, run_id: str, *, include_interrupted: bool = False, after: int = -1
    ) -> list[Snapshot]:
        """A run's snapshots in the order they were saved.

        Args:
            run_id: The store run id.
            include_interrupted: Also list snapshots with an open tool call.
            after: Only snapshots whose index is greater (a reader's watermark), so a reader that
                has folded in snapshots up to `after` reads only what was saved since.

        Raises:
            CorruptSnapshotError: A row cannot be decoded; it is reported, never skipped.
        """
        ...

    async def read_messages(self, run_id: str, seqs: Sequence[int]) -> dict[int, ModelMessage]:
        """Messages of a run's log by log number (`Snapshot.seqs`); numbers not stored are left out.

        Raises:
            CorruptSnapshotError: A body does not decode (its snapshot index is reported as -1).
        """
        ...

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        """`read_messages` for several runs in one read: run id -> log number -> message.

        What a search answer shows comes from a handful of runs; reading them together saves a
        round trip (and a worker-thread hop) per run. Runs with nothing stored are left out.

        Raises:
            CorruptSnapshotError: A body does not decode (its snapshot index is reported as -1).
        """
        ...

    def index_storage(self) -> IndexStorage:
        """The store's half of the persistent search index (same database, same connection)."""
        ...


class Listing(Protocol):
    """A run's listing read ahead (`SharingReader.read_listings`): its rows are in memory, not decoded yet."""

    def snapshots(self, shared: MutableMapping[object, ModelMessage]) -> list[Snapshot]:
        """Decode the listing, as `list_snapshots_sharing` would have returned it.

        Raises:
            CorruptSnapshotError: A row did not read or does not decode (the same error the
                run's own listing would raise).
        """
        ...


@runtime_checkable
class SharingReader(Protocol):
    """A store that decodes a listing through its reader's cache of messages by stored body.

    The index's catch-up reads run after run of a conversation, and each run's first snapshot
    holds the window it inherited: the earlier run's bodies, decoded when that run was read. A
    store offering this (the SQLite and Postgres stores) decodes only the bodies the cache does
    not hold; any other `SnapshotReader` is read with `list_snapshots`.
    """

    async def list_snapshots_sharing(
        self, run_id: str, *, after: int, shared: MutableMapping[object, ModelMessage]
    ) -> list[Snapshot]:
        """`list_snapshots(run_id, include_interrupted=True, after=after)`, messages shared through `shared`.

        Args:
            run_id: The store run id.
            after: As for `list_snapshots`.
            shared: Decoded messages by stored body (`Snapshot.bodies`): read for the bodies it
                holds, filled with the ones decoded. The snapshots returned share those objects.
        """
        ...

    async def read_listings(self, after: Mapping[str, int]) -> dict[str, Listing]:
        """Several runs' listings (`list_snapshots(include_interrupted=True, after=...)`) in one read, decoded later.

        Catch-up reads a batch of runs one after the other, and each run's listing is a few rows:
        on a chat's thousands of short runs, a worker-thread hop (SQLite) or a transaction's round
        trips (Postgres) per run cost more than the rows. This reads the batch's rows in one
        transaction; each run's listing is decoded when its turn comes, through the cache that
        the earlier runs filled.

        Args:
            after: Each run's watermark, as for `list_snapshots`.

        Returns:
            A listing per run asked (a run without rows after its watermark lists nothing); a
            run whose rows do not read gets a listing that raises its error when decoded, so
            one damaged run does not stop the others.
        """
        ...


@runtime_checkable
class IndexRowsWithRecords(Protocol):
    """A store that reads runs' index rows together with their records (one round trip, not two).

    Catch-up starts each batch with both: the index rows say how far each run was read, the
    records what each run is. A networked store (Postgres) reads them in one statement; the
    index's catch-up in a write pays one round trip fewer.
    """

    async def index_rows_with_records(
        self, run_ids: Sequence[str]
    ) -> tuple[dict[str, IndexedRunRow], dict[str, RunRecord]]:
        """The runs' index rows (runs never indexed left out) and records (runs gone left out).

        Raises:
            CorruptRunError: A run row does not read (catch-up then reads the runs apart).
        """
        ...
