"""Errors durable-recall raises that a retry may fix or that name damaged data: no pydantic-ai needed.

Every class derives from [`DurableRecallError`][durable_recall.errors.DurableRecallError]. The errors a
retry cannot fix, which also derive from pydantic-ai's `UserError`, live in `_errors`: this module
imports nothing outside the standard library, so that a store can be opened and read (the
`durable-recall conversations` command) without loading pydantic-ai, most of a second.
"""

from __future__ import annotations

__all__ = (
    'ConversationKeyErasedError',
    'CorruptRunError',
    'CorruptSnapshotError',
    'DurableRecallError',
    'JournalPayloadError',
    'StoreUnavailableError',
)


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


class JournalPayloadError(DurableRecallError):
    """An encrypted journal payload (a Temporal history payload, a DBOS step output) cannot be decrypted.

    Raised by the journal codecs (`durable_recall.temporal.ConversationPayloadCodec`,
    `durable_recall.dbos.ConversationSerializer`) instead of handing the engine bytes it would
    misread: the payload was altered, or its key was replaced under the same id.
    """

    def __init__(self, key_id: str, reason: str) -> None:
        super().__init__(f'journal payload encrypted with key {key_id!r} cannot be decrypted: {reason}')
        self.key_id = key_id
        self.reason = reason


class ConversationKeyErasedError(JournalPayloadError):
    """A journal payload's conversation key is gone: the conversation was deleted (or the store is another).

    Deleting a conversation deletes its keys, which is what makes the engines' copies of it
    unreadable; a replay, a recovery or a history decode that needs one of those payloads then
    fails with this error rather than with garbage. Not retryable: the key never comes back.
    """

    def __init__(self, key_id: str) -> None:
        DurableRecallError.__init__(
            self,
            f'journal payload encrypted with conversation key {key_id!r} cannot be decrypted: the key is erased '
            '(its conversation was deleted), or the codec reads another store than the one that encrypted it',
        )
        self.key_id = key_id
        self.reason = 'key erased'
