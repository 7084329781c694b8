"""Where catch-up reads records from: a record feed says what changed in a run since its index row.

`SnapshotFeed` folds a store's snapshots saved since the run was last indexed, resuming the record
builder from the state the index row keeps, so only new snapshots (and the few stored messages the
state names) are read. The search layer feeds any other history source through the same seam.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..base import CorruptSnapshotError, RunRecord
from ..history import Cleaned, FoldState, RecordBuilder
from ._layout import decode_ints
from ._reader import Listing, SharingReader, SnapshotReader
from ._storage import IndexedRunRow

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('Folded', 'RecordFeed', 'RecordView', 'SnapshotFeed')

_MAX_DIGESTS = 65_536
"""Stored bodies whose hashes a feed keeps (a few MB at chat length)."""

_MAX_DECODED = 4_096
"""Stored bodies whose decoded messages a feed keeps: far more than a window, a few MB of messages."""


class RecordView(Protocol):
    """A run's record as catch-up reads it: messages, their content hashes and log numbers by position."""

    def __len__(self) -> int:
        """The record's length."""
        ...

    def message(self, position: int) -> ModelMessage:
        """The record message at a position."""
        ...

    def hash(self, position: int) -> str:
        """Its canonical content hash (hex)."""
        ...

    def seq(self, position: int) -> int:
        """The log number its body is read back by (never reused for other content in the run)."""
        ...


@dataclass(frozen=True)
class Folded:
    """What a run's record became since its index row was written.

    Attributes:
        record: The record now.
        changes: Positions that are new (`None`) or hold another message than before (the old one).
        upto: The newest change the index has now read (snapshot index or record version).
        state: What to resume from next time (the record builder's state, `FoldState.to_bytes`; empty for none).
    """

    record: RecordView
    changes: dict[int, ModelMessage | None]
    upto: int
    state: bytes


class RecordFeed(Protocol):
    """Where catch-up gets records from: a store's snapshots, or any other history source."""

    async def records(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The runs' records (runs gone are left out).

        Raises:
            CorruptRunError: A run's row does not read (catch-up then reads the runs one by one).
        """
        ...

    async def fold(self, run: RunRecord, row: IndexedRunRow | None) -> Folded:
        """The run's record and what changed in it since `row` (`None`: never indexed).

        Raises:
            CorruptSnapshotError: The run's history does not read.
        """
        ...


class SnapshotFeed:
    """Records rebuilt from a store's snapshots, resuming each run's fold where its index row left it."""

    def __init__(self, store: SnapshotReader) -> None:
        self._store = store
        self._digests: dict[object, str] = {}
        """Content hashes by stored body, shared by the runs folded: a run's inherited window was hashed before."""
        self._decoded: dict[object, ModelMessage] = {}
        """Decoded messages by stored body, likewise: the inherited window was decoded with the earlier run."""
        self._cleaned: dict[object, Cleaned] = {}
        """Those messages without their artifacts, likewise (see `RecordBuilder`)."""
        self._sharing = store if isinstance(store, SharingReader) else None
        self._ahead: dict[str, tuple[int, Listing]] = {}
        """Listings read ahead for a batch of runs (`read_ahead`), with the watermark each was read after."""

    async def records(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The runs' records, in one read."""
        return await self._store.get_runs(run_ids)

    async def read_ahead(self, after: Mapping[str, int]) -> None:
        """Read the listings of a batch of runs about to be folded in one read (see `SharingReader.read_listings`).

        `fold` takes a run's listing from here when it was read after the same watermark, and
        reads it itself otherwise. What was read ahead for an earlier batch is dropped.

        Args:
            after: Each run's index watermark (`IndexedRunRow.seen`, -1 for a run never indexed).
        """
        self._ahead = {}
        if self._sharing is not None and len(after) > 1:
            listings = await self._sharing.read_listings(after)
            self._ahead = {run_id: (after[run_id], listing) for run_id, listing in listings.items()}

    def drop_ahead(self) -> None:
        """Forget what `read_ahead` read (a batch is done, or is being redone run by run)."""
        self._ahead = {}

    async def fold(self, run: RunRecord, row: IndexedRunRow | None) -> Folded:
        """Fold the snapshots saved since the run's index row (only those are read)."""
        seen = row.seen if row is not None else -1
        ahead = self._ahead.pop(run.run_id, None)
        if ahead is not None and ahead[0] == seen:
            snapshots = ahead[1].snapshots(self._decoded)
        elif self._sharing is not None:
            snapshots = await self._sharing.list_snapshots_sharing(run.run_id, after=seen, shared=self._decoded)
        else:
            snapshots = await self._store.list_snapshots(run.run_id, include_interrupted=True, after=seen)
        builder = await self._builder(run.run_id, row)
        upto = seen
        for snapshot in snapshots:
            upto = max(upto, snapshot.index)
            if snapshot.state == 'complete':
                builder.fold(snapshot.messages, snapshot.seqs, snapshot.bodies)
        if len(self._digests) > _MAX_DIGESTS:
            self._digests.clear()  # a bound, not a policy: the next runs refill what they share
        if len(self._decoded) > _MAX_DECODED or len(self._cleaned) > _MAX_DECODED:
            self._decoded.clear()
            self._cleaned.clear()
        state = builder.state.to_bytes() if len(builder) or snapshots else (row.state if row else b'')
        return Folded(builder, builder.take_changes(), upto, state)

    async def _builder(self, run_id: str, row: IndexedRunRow | None) -> RecordBuilder:
        if row is None or not row.state:
            return RecordBuilder(track_changes=True, digests=self._digests, cleaned=self._cleaned)
        try:
            state = FoldState.from_bytes(row.state)
        except ValueError as error:
            raise CorruptSnapshotError(run_id, row.seen, f'the index state does not read ({error})') from error
        seqs = decode_ints(row.seqs)
        previous, positions = state.needed()
        wanted = [*previous, *(seqs[position] for position in positions)]
        loaded = await self._store.read_messages(run_id, wanted)
        missing = [seq for seq in wanted if seq not in loaded]
        if missing:
            raise CorruptSnapshotError(run_id, row.seen, f'message log entries {missing[:5]} are missing')
        return RecordBuilder.resume(state, loaded, {p: loaded[seqs[p]] for p in positions}, digests=self._digests)
