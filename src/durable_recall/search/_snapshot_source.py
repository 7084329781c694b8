"""`SnapshotHistorySource`: a run's durable record, rebuilt from its complete snapshots in a step store."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ..base import RunRecord
from ..history import RecordBuilder, RunHistory
from ..stores import StepStore

__all__ = ('SnapshotHistorySource',)


@dataclass(eq=False)
class _Cached:
    run: RunRecord
    builder: RecordBuilder
    version: int = -1


class SnapshotHistorySource:
    """Reads runs and their records from the store `StepPersistence` writes to.

    Each run's record is rebuilt from its `complete` snapshots (an interrupted one holds an
    unanswered tool call; whatever it had reaches a later complete snapshot) by a
    [`RecordBuilder`][durable_recall.history.RecordBuilder]. Builders are cached, least recently
    used first out, with the index of the last snapshot they folded, so a later call reads and folds
    only the snapshots saved since, instead of rebuilding the run on every search.

    Two sources over the same store object are equal: they give the same answers, so two search
    capabilities built on one store agree when an agent combines them.

    Args:
        store: The store `StepPersistence` writes to.
        max_cached_runs: How many runs' builders to keep; 0 rebuilds every run on every call.

    Raises:
        TypeError: `store` does not implement `StepStore`, or `max_cached_runs` is not an int.
        ValueError: `max_cached_runs` is negative.
    """

    def __init__(self, store: StepStore, *, max_cached_runs: int = 1024) -> None:
        if not isinstance(store, StepStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f'SnapshotHistorySource needs a StepStore, got {type(store).__name__}: use InMemoryStepStore, '
                'SqliteStepStore, PostgresStepStore or another object implementing the StepStore protocol.'
            )
        if isinstance(max_cached_runs, bool) or not isinstance(max_cached_runs, int):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'max_cached_runs must be an int, got {max_cached_runs!r}')
        if max_cached_runs < 0:
            raise ValueError(f'max_cached_runs must be at least 0, got {max_cached_runs!r}')
        self._store = store
        self._max_cached_runs = max_cached_runs
        self._cache: OrderedDict[str, _Cached] = OrderedDict()

    @property
    def store(self) -> StepStore:
        """The store the records are read from."""
        return self._store

    def __repr__(self) -> str:
        return f'SnapshotHistorySource({self._store!r})'

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SnapshotHistorySource):
            return NotImplemented
        return other._store is self._store

    def __hash__(self) -> int:
        return hash((SnapshotHistorySource, id(self._store)))

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        """The runs in scope, oldest first; the conversation filter runs in the store."""
        return await self._store.list_runs(conversation_id=conversation_id)

    async def run_history(self, run_id: str) -> RunHistory | None:
        """The run's record, folding in only the snapshots saved since the last call.

        Returns `None` for a run the store does not know.

        Raises:
            CorruptSnapshotError: A snapshot of the run cannot be decoded (the cached record
                stays at the last snapshot that could).
        """
        run = await self._store.get_run(run_id)
        if run is None:
            self._cache.pop(run_id, None)
            return None
        cached = self._cache.get(run_id)
        if cached is None or cached.run != run:
            # Unknown here, or the id was deleted and registered again by another run.
            cached = _Cached(run, RecordBuilder())
        snapshots = await self._store.list_snapshots(run_id, after=cached.version)
        for snapshot in snapshots:
            # A concurrent call may have folded some of these while this one awaited the store.
            if snapshot.index > cached.version:
                cached.builder.fold(snapshot.messages)
                cached.version = snapshot.index
        self._remember(run_id, cached)
        builder = cached.builder
        return RunHistory(run=run, messages=builder.messages, hashes=builder.hashes, version=cached.version)

    def _remember(self, run_id: str, cached: _Cached) -> None:
        if self._max_cached_runs == 0:
            return
        self._cache[run_id] = cached
        self._cache.move_to_end(run_id)
        while len(self._cache) > self._max_cached_runs:
            self._cache.popitem(last=False)
