"""Binding lists of values in SQLite statements: `IN (?, ?, ...)` lists, in chunks.

Old SQLite builds allow at most 999 bound parameters per statement, so every list of run ids,
log numbers, terms or hashes is bound a chunk at a time, with room left for a statement's other
parameters.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from typing import Any, TypeVar

__all__ = ('CHUNK', 'chunked', 'marks')

_T = TypeVar('_T')

CHUNK = 500
"""Values bound per `IN (...)` list."""


def chunked(values: Iterable[_T], size: int = CHUNK) -> Generator[list[_T]]:
    """The values in lists of at most `size`, in order."""
    batch: list[_T] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def marks(values: Sequence[Any]) -> str:
    """One `?` per value, comma-separated: the inside of an `IN (...)` list."""
    return ', '.join('?' * len(values))
