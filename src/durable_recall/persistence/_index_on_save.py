"""Index what a save wrote, in the save's own durable operation, so that searches find the index current.

A search otherwise catches up the snapshots saved since the last search itself, inside the
activity or step a turn waits on: on Postgres a catch-up is about twenty statements in two
transactions, several times what the search itself reads, and concurrent catch-ups of one
conversation queue on its index lock. Indexed where it is written (after the snapshots commit,
by the worker that wrote them), a search finds nothing pending and reads only the index.

The index is derived data: a catch-up that fails leaves the runs marked pending, and the next
search (or `update_index`) catches them up. So a failure here is logged, never raised, except
an outage, which the durable engine retries (the save is idempotent, and so is the catch-up:
each run's `seen` watermark says what it already indexed).

With hybrid ranking asked for, the messages just indexed are embedded too, in batches (an
embedder's failure is logged like an index failure: the next hybrid search embeds them), and a
retried save embeds nothing twice: each run's vectors carry the `seen` they were computed at.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base import SnapshotDelta, StoreUnavailableError
from ..index import Indexer
from ..search import embed_indexed
from ..stores import StepStore

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder

__all__ = ('index_saved',)

_log = logging.getLogger('durable_recall.persistence')


async def index_saved(
    store: StepStore, deltas: Sequence[SnapshotDelta], *, embed: bool = False, embedder: Embedder | None = None
) -> None:
    """Catch the index of these snapshots' runs up with them (see the module docstring).

    `embed`: embed the indexed messages as well, with `embedder` (`None`: the local default).

    A run whose index already read them (a retried save, another worker's catch-up) is left
    alone: nothing is committed, and no search's cached postings are made stale.

    Raises:
        StoreUnavailableError: The store could not be reached (the operation is retried).
    """
    try:
        upto: dict[str, int] = {}
        for delta in deltas:
            upto[delta.run_id] = max(upto.get(delta.run_id, -1), delta.index)
        problems = await Indexer.of_store(store).catch_up(list(upto), upto=upto)
        if embed:
            await embed_indexed(store, embedder, list(upto))
    except StoreUnavailableError:
        raise
    except Exception as error:
        _log.warning(
            'indexing the snapshots just saved failed (%s); the next search catches them up',
            type(error).__name__,
            exc_info=True,
        )
        return
    for problem in problems:
        _log.warning('a run just saved could not be indexed (%s); the next search retries it', problem)
