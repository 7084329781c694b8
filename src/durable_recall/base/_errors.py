"""Errors that durable-recall raises, one class per condition an operator can act on.

Every class derives from [`DurableRecallError`][durable_recall.errors.DurableRecallError]. The ones a
durable engine must not retry (a retry cannot fix them) also derive from pydantic-ai's
`UserError`, which Temporal and DBOS integrations treat as non-retryable. They are defined here,
with pydantic-ai imported; the others (in `_plain_errors`, re-exported here) need no pydantic-ai.
The package loads this module on the first use of one of its classes (`base.__getattr__`), and a
module on the path of a command that only reads a store imports these classes where it raises
one: the class is always the same one, deriving from `UserError`, whenever it exists.
"""

from __future__ import annotations

from pydantic_ai.exceptions import UserError

from ._plain_errors import CorruptRunError, CorruptSnapshotError, DurableRecallError, StoreUnavailableError

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


class StoreConfigurationError(DurableRecallError, UserError, ValueError):
    """A store was configured with a value it cannot use (bad URL scheme, unwritable path, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


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


class SnapshotChainError(DurableRecallError, UserError):
    """A snapshot delta does not follow the snapshot it claims to extend."""


class WorkflowCodeIOError(DurableRecallError, UserError):
    """A store write was about to run inline in workflow code, where I/O breaks determinism."""
