"""Errors that durable-recall raises, one class per condition an operator can act on.

Every class derives from [`DurableRecallError`][durable_recall.DurableRecallError]. The ones a
durable engine must not retry (a retry cannot fix them) also derive from pydantic-ai's
`UserError`, which Temporal and DBOS integrations treat as non-retryable.
"""

from __future__ import annotations

from pydantic_ai.exceptions import UserError

__all__ = (
    'CorruptRunError',
    'CorruptSnapshotError',
    'DurableRecallError',
    'RunIdConflictError',
    'SnapshotChainError',
    'StoreConfigurationError',
    'StoreUnavailableError',
    'WorkflowCodeIOError',
)


class DurableRecallError(Exception):
    """Base class of every error durable-recall raises on purpose."""


class StoreConfigurationError(DurableRecallError, UserError, ValueError):
    """A store was configured with a value it cannot use (bad URL scheme, unwritable path, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class StoreUnavailableError(DurableRecallError, ConnectionError):
    """The store's backing service refused or dropped the connection.

    Retryable: a durable engine's retry policy may succeed once the service is back.
    """


class RunIdConflictError(DurableRecallError, UserError):
    """An explicit run id was reused by a different agent run.

    A run id names one run for ever; a second run that claims it would interleave two histories.
    """

    def __init__(self, run_id: str, detail: str | None = None) -> None:
        """Name the run id, and what showed it reused (another registration, or other content).

        Args:
            run_id: The reused run id.
            detail: What was found; by default, that another agent run registered it.
        """
        found = detail or f'run id {run_id!r} is already registered by a different agent run'
        message = (
            f'StepPersistence: {found}. '
            'A run id names exactly one run: leave `run_id` unset (each run then gets its own id) '
            'or pass a fresh one per run (a retry of a failed run too), and use `conversation_id=` to group runs.'
        )
        super().__init__(message)
        self.run_id = run_id
        self.message = message
        self.run_id = run_id


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


class SnapshotChainError(DurableRecallError, UserError):
    """A snapshot delta does not follow the snapshot it claims to extend."""


class WorkflowCodeIOError(DurableRecallError, UserError):
    """A store write was about to run inline in workflow code, where I/O breaks determinism."""
