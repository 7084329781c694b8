"""Errors durable-recall raises that a retry may fix or that name damaged data: no pydantic-ai needed.

Every class derives from [`DurableRecallError`][durable_recall.errors.DurableRecallError]. The errors a
retry cannot fix, which also derive from pydantic-ai's `UserError`, live in `_errors`: this module
imports nothing outside the standard library, so that a store can be opened and read (the
`durable-recall conversations` command) without loading pydantic-ai, most of a second.
"""

from __future__ import annotations

__all__ = ('CorruptRunError', 'CorruptSnapshotError', 'DurableRecallError', 'StoreUnavailableError')


class DurableRecallError(Exception):
    """Base class of every error durable-recall raises on purpose."""


class StoreUnavailableError(DurableRecallError, ConnectionError):
    """The store's backing service refused or dropped the connection.

    Retryable: a durable engine's retry policy may succeed once the service is back.
    """


class CorruptSnapshotError(DurableRecallError):
    """A stored snapshot or message row cannot be decoded.

    Raised instead of skipping the row, so that nothing is silently lost from a record.
    """

    def __init__(self, run_id: str, index: int, reason: str) -> None:
        super().__init__(f'snapshot {index} of run {run_id!r} is corrupt: {reason}')
        self.run_id = run_id
        self.index = index
        self.reason = reason


class CorruptRunError(DurableRecallError):
    """A stored run row (its start time or metadata) cannot be decoded.

    Raised instead of reading the run back with made-up values; a search names the run in its
    answer, as it names a corrupt snapshot, and goes on with the rest of the scope.
    """

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(f'the record of run {run_id!r} is corrupt: {reason}')
        self.run_id = run_id
        self.reason = reason
