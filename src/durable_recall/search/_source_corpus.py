"""Any `HistorySource` as a corpus: its records indexed in memory, behind the same port as a store's index.

A source other than the store's own (`SnapshotHistorySource` over a `StepStore` uses the store's
persistent index) gives whole records with a version. On each search the scope's runs are listed and
each run whose version moved is diffed against what was indexed: positions whose content hash
changed, or that are new, are what catch-up indexes, through the same `Indexer` that catches a
store's index up from snapshots. Each distinct message a run held gets a log number of its own, so a
number read back always names the content it was indexed from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage

from ..base import CorruptSnapshotError, RunRecord, format_timestamp
from ..history import HistorySource, RunHistory
from ..index import Folded, IndexedRunRow, Indexer, IndexStorage, Progress, ScopeStatus, Unreadable
from ..stores import MemoryIndex
from ._shown import StoredMessage

__all__ = ('SourceCorpus',)


@dataclass
class _Run:
    """What the corpus holds of one run: its record, the hashes and log numbers indexed, and its log."""

    run: RunRecord
    version: int
    hashes: list[str] = field(default_factory=list[str])
    seqs: list[int] = field(default_factory=list[int])
    log: list[ModelMessage] = field(default_factory=list[ModelMessage])


class _View:
    """A run's new record as catch-up reads it, with the run's log numbers."""

    def __init__(self, history: RunHistory, seqs: Sequence[int]) -> None:
        self._history = history
        self._seqs = seqs

    def __len__(self) -> int:
        return len(self._history.messages)

    def message(self, position: int) -> ModelMessage:
        return self._history.messages[position]

    def hash(self, position: int) -> str:
        return self._history.hashes[position]

    def seq(self, position: int) -> int:
        return self._seqs[position]


class _Feed:
    """The record feed of a `SourceCorpus`: the diffs its refresh prepared."""

    def __init__(self, corpus: SourceCorpus) -> None:
        self._corpus = corpus

    async def records(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        runs = self._corpus.runs
        return {run_id: runs[run_id].run for run_id in run_ids if run_id in runs}

    async def fold(self, run: RunRecord, row: IndexedRunRow | None) -> Folded:
        return self._corpus.folded[run.run_id]


class SourceCorpus:
    """A `HistorySource`'s records, indexed in memory as they change."""

    def __init__(self, source: HistorySource) -> None:
        self._source = source
        self.runs: dict[str, _Run] = {}
        self.folded: dict[str, Folded] = {}
        self._index = MemoryIndex(run_order=self._run_order)
        self._indexer = Indexer(self._index, _Feed(self))

    @property
    def storage(self) -> IndexStorage:
        """The in-memory index."""
        return self._index

    async def refresh(
        self, conversation_id: str | None, *, all_scopes: bool, progress: Progress | None = None
    ) -> tuple[ScopeStatus, list[Unreadable]]:
        """List the scope's runs, diff the records whose version moved, and index the differences."""
        listed = await self._source.list_runs(conversation_id=None if all_scopes else conversation_id)
        problems: list[Unreadable] = []
        histories: list[RunHistory] = []
        unread: set[str] = set()
        for run in listed:
            try:
                history = await self._source.run_history(run.run_id)
            except CorruptSnapshotError as error:
                problems.append(error)
                unread.add(run.run_id)  # keeps what was indexed of it, as a store's index does
                continue
            if history is not None:
                histories.append(history)
        if self._must_rebuild(histories, unread, conversation_id, all_scopes=all_scopes):
            # A run left the scope, was registered anew, or its record shrank: postings can only
            # be added to or rewritten, so the index starts over (rare: records only grow).
            self.runs.clear()
            self._index = MemoryIndex(run_order=self._run_order)
            self._indexer = Indexer(self._index, _Feed(self))
        for history in histories:
            self._diff(history)
        status = await self._index.status(conversation_id, all_scopes=all_scopes)
        if status.pending:
            problems += await self._indexer.catch_up(status.pending, progress)
            self.folded.clear()
            status = await self._index.status(conversation_id, all_scopes=all_scopes)
        return status, problems

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """The records of runs the corpus holds."""
        return {run_id: self.runs[run_id].run for run_id in run_ids if run_id in self.runs}

    async def read_stored(self, wanted: Mapping[str, Sequence[int]]) -> Mapping[str, Mapping[int, StoredMessage]]:
        """The messages as `read_logs` gives them: this corpus holds them decoded."""
        return await self.read_logs(wanted)

    async def read_logs(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, ModelMessage]]:
        """Messages by log number."""
        out: dict[str, dict[int, ModelMessage]] = {}
        for run_id, seqs in wanted.items():
            held = self.runs.get(run_id)
            if held is not None:
                out[run_id] = {seq: held.log[seq] for seq in seqs if 0 <= seq < len(held.log)}
        return out

    def _must_rebuild(
        self, histories: list[RunHistory], unread: set[str], conversation_id: str | None, *, all_scopes: bool
    ) -> bool:
        current = {history.run.run_id: history for history in histories}
        for run_id, held in self.runs.items():
            if run_id in unread or (not all_scopes and held.run.conversation_id != conversation_id):
                continue
            history = current.get(run_id)
            if history is None or history.run != held.run or len(history.messages) < len(held.hashes):
                return True
        return False

    def _diff(self, history: RunHistory) -> None:
        run_id = history.run.run_id
        held = self.runs.get(run_id)
        if held is not None and held.version == history.version:
            return
        if held is None:
            held = self.runs[run_id] = _Run(history.run, history.version)
        changes: dict[int, ModelMessage | None] = {}
        for position, digest in enumerate(history.hashes):
            if position < len(held.hashes) and held.hashes[position] == digest:
                continue
            if position < len(held.hashes):
                changes[position] = held.log[held.seqs[position]]
                held.hashes[position] = digest
                held.seqs[position] = len(held.log)
            else:
                changes[position] = None
                held.hashes.append(digest)
                held.seqs.append(len(held.log))
            held.log.append(history.messages[position])
        held.version = history.version
        self.folded[run_id] = Folded(_View(history, list(held.seqs)), changes, history.version, b'')
        self._index.mark_pending(run_id, history.run.conversation_id, history.version)

    def _run_order(self, run_id: str) -> tuple[str, str] | None:
        held = self.runs.get(run_id)
        return None if held is None else (format_timestamp(held.run.started_at), run_id)
