"""Asking the durable engine whether this workflow may write its queue later than a recall call.

Until this release, `StepPersistence` in workflow code wrote its queued snapshots before every
recall tool call. Leaving them queued when nothing in them is out of the model's view (see
`_deferral`) removes an operation from the workflow's history. A workflow whose history was
recorded by the older release must replay the operation it recorded, so the change is gated the
engines' way: Temporal's `workflow.patched()` and DBOS's `DBOS.patch_async()`, which say yes for a
workflow that starts (or reaches this point) under this release and no for one replaying a history
without the marker. Another engine, or none, keeps the older behaviour: the queue is written.

The engines are only consulted when they are already imported, so the core stays free of them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from dbos._context import DBOSContext

__all__ = ('DEFER_WRITE_PATCH', 'deferral_allowed')

DEFER_WRITE_PATCH = 'durable-recall:defer-write-before-recall'
"""The patch id (Temporal) and patch name (DBOS) of the deferred write: compatibility data, pinned in a test."""

_dbos_answers: WeakKeyDictionary[DBOSContext, bool] = WeakKeyDictionary()
"""Each DBOS workflow execution's answer, asked once (every later call reuses it, as Temporal's memoizes)."""


async def deferral_allowed() -> bool:
    """Whether the current workflow may leave its queue unwritten before a recall call.

    Call it only where the answer changes what the workflow does (its first call records the
    marker), and only from workflow code.
    """
    if 'temporalio.workflow' in sys.modules:
        from temporalio import workflow

        if workflow.in_workflow():
            return workflow.patched(DEFER_WRITE_PATCH)
    if 'dbos' in sys.modules:
        from dbos import DBOS

        if DBOS.workflow_id is not None and DBOS.step_id is None:
            return await _dbos_patched()
    return False


async def _dbos_patched() -> bool:
    from dbos import DBOS
    from dbos._context import get_local_dbos_context
    from dbos._error import DBOSPatchNondeterminismError

    context = get_local_dbos_context()
    if context is None:  # pragma: no cover - DBOS.workflow_id was set, so a context exists
        return False
    known = _dbos_answers.get(context)
    if known is not None:
        return known
    try:
        answer = await DBOS.patch_async(DEFER_WRITE_PATCH)
    except DBOSPatchNondeterminismError:
        # Another step of the workflow started while the marker was probed: nothing was recorded,
        # so this execution writes first, as a workflow of the older release does.
        answer = False
    _dbos_answers[context] = answer
    return answer
