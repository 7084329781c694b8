"""Message vectors for hybrid ranking: what a store keeps of them, and how they are packed.

Vectors are derived data, like the postings: computed from a run's record by the search that
needs them (inside the search operation, so inside a Temporal activity or a DBOS step), and
kept beside the index so that a cold process does not embed the history again. BM25-only
searches never read or write them.

A row holds one run's vectors under one embedding model (`model`: provider, model name and
dimensions, so that two models' vectors never mix): the vector of each searchable position (from
the run's `first` on) as little-endian float32, and an 8-byte hash of the text each was computed
from. `seen` is the run's index watermark when the row was written: while it matches, the row is
current; when it does not, only the positions whose text changed are embedded again.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ('HASH_BYTES', 'MemoryVectors', 'VectorRow', 'VectorStorage', 'pack_floats', 'unpack_floats')

HASH_BYTES = 8
"""Bytes of each position's text hash in `VectorRow.hashes`."""


@dataclass(frozen=True, kw_only=True)
class VectorRow:
    """One run's vectors under one model.

    Attributes:
        run_id: The run.
        seen: The run's index `seen` when the vectors were computed.
        dim: Dimensions per vector.
        hashes: `HASH_BYTES` per searchable position, the hash of the text embedded.
        vectors: `dim` little-endian float32 per searchable position.
    """

    run_id: str
    seen: int
    dim: int
    hashes: bytes
    vectors: bytes

    @property
    def count(self) -> int:
        """Positions the row holds."""
        return len(self.hashes) // HASH_BYTES

    def well_formed(self) -> bool:
        """Whether the byte lengths agree with each other (a damaged row is computed again)."""
        return self.dim > 0 and len(self.hashes) % HASH_BYTES == 0 and len(self.vectors) == self.count * self.dim * 4


@runtime_checkable
class VectorStorage(Protocol):
    """Where a store keeps message vectors (see the module docstring)."""

    async def load_vectors(self, model: str, run_ids: Sequence[str]) -> dict[str, VectorRow]:
        """These runs' rows under `model` (runs without one are left out)."""
        ...

    async def save_vectors(self, model: str, rows: Sequence[VectorRow]) -> None:
        """Insert or replace these runs' rows under `model`, in one transaction."""
        ...


class MemoryVectors:
    """`VectorStorage` in this process: the in-memory store's, and any other source's."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], VectorRow] = {}

    def __repr__(self) -> str:
        return f'MemoryVectors({len(self._rows)} rows)'

    async def load_vectors(self, model: str, run_ids: Sequence[str]) -> dict[str, VectorRow]:
        """The rows held for these runs."""
        return {run_id: row for run_id in run_ids if (row := self._rows.get((model, run_id))) is not None}

    async def save_vectors(self, model: str, rows: Sequence[VectorRow]) -> None:
        """Keep these rows."""
        for row in rows:
            self._rows[model, row.run_id] = row

    def forget(self, run_ids: Sequence[str]) -> None:
        """Drop every model's rows of these runs (their conversation was deleted)."""
        doomed = set(run_ids)
        for key in [key for key in self._rows if key[1] in doomed]:
            del self._rows[key]


def pack_floats(values: Sequence[float]) -> bytes:
    """Little-endian float32, 4 bytes a value."""
    packed = array('f', values)
    if sys.byteorder == 'big':  # pragma: no cover - little-endian hosts only in CI
        packed.byteswap()
    return packed.tobytes()


def unpack_floats(data: bytes) -> array[float]:
    """The values `pack_floats` packed."""
    values = array('f')
    values.frombytes(data[: len(data) - len(data) % 4])
    if sys.byteorder == 'big':  # pragma: no cover
        values.byteswap()
    return values
