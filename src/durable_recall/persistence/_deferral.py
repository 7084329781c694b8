"""Whether a recall tool call needs the queued snapshots written first, or can leave them for later.

In workflow code `StepPersistence` queues snapshots and writes them in one durable operation. Before
a recall tool runs (`flush_before_tools`), the queue is written so that the search can find what the
run has seen. But a search only needs what the model no longer sees: a queued message that is still
in the model's view (the turn's own prompt, in a chat whose window keeps it) adds nothing an answer
should show, and writing it costs an operation (a Temporal activity, a DBOS step) in front of the
search, on every turn that searches.

So the queue is written first only when one of its snapshots holds a message that is neither in the
live history the tool call comes from nor already written by an earlier write in this workflow (for
example a message passed in `message_history` that no persisted run saved, which a compaction then
dropped). Otherwise it waits for the run's end (or a full batch), and the search runs at once.

The decision is a function of the workflow's own state, which a replay rebuilds in the same order:
the live messages, and which message objects this workflow's writes have saved, tracked by identity
for as long as the object lives (`remember_written`). Not the recent-runs cache that lets a delta
name its base: its evictions depend on other workflows sharing the process.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from weakref import WeakValueDictionary

from pydantic_ai.messages import ModelMessage

__all__ = ('must_write_first', 'remember_written')

_written: WeakValueDictionary[int, ModelMessage] = WeakValueDictionary()
"""Message objects a completed write saved, by `id()`; an entry goes when its object is collected."""


def remember_written(snapshots: Iterable[Sequence[ModelMessage]]) -> None:
    """Note the messages of snapshots a write just saved (the same objects the run goes on using)."""
    for snapshot in snapshots:
        for message in snapshot:
            key = id(message)
            if _written.get(key) is not message:
                _written[key] = message


def must_write_first(queued: Iterable[Sequence[ModelMessage]], live: Sequence[ModelMessage]) -> bool:
    """Whether a queued snapshot holds a message that is out of the live view and not written yet."""
    in_view = {id(message) for message in live}
    for snapshot in queued:
        for message in snapshot:
            key = id(message)
            if key not in in_view and _written.get(key) is not message:
                return True
    return False
