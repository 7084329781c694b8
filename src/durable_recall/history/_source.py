"""The seam between the substrate and the search: list a scope's runs, give one run's record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..base import RunRecord

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('HistorySource', 'RunHistory')


@dataclass(frozen=True, kw_only=True)
class RunHistory:
    """One run's durable record: each message the run persisted, once, in order.

    Attributes:
        run: The run's record (it carries the conversation id).
        messages: The record, compaction artifacts removed.
        hashes: The canonical content hash of each message, aligned with `messages`. Equal
            hashes mean the same message, whatever core or an engine re-stamped on it.
        version: Grows whenever the record changes (for a snapshot source: the index of the
            last snapshot folded in), so a reader can keep what it derived from an unchanged
            record.
    """

    run: RunRecord
    messages: Sequence[ModelMessage]
    hashes: Sequence[str]
    version: int


@runtime_checkable
class HistorySource(Protocol):
    """Where the search reads persisted history from."""

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        """The runs in scope, oldest first (ties by run id).

        Args:
            conversation_id: Only this conversation's runs; `None` lists every run. The filter
                is applied by the store, never by listing everything and filtering here.
        """
        ...

    async def run_history(self, run_id: str) -> RunHistory | None:
        """One run's record, or `None` if the source does not know the run.

        Raises:
            CorruptSnapshotError: A snapshot of the run cannot be decoded.
        """
        ...
