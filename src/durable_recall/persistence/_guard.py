"""Refusing store I/O in workflow code under the deprecated engine wrappers.

Whether to batch is asked of pydantic-ai (`RunContext.in_durable_context`, which covers every
durability capability). This is the one engine-specific check left: a store write that runs inline
in a Temporal workflow or a DBOS workflow function (which is what the deprecated `TemporalAgent` /
`DBOSAgent` wrappers do with capability operations, with no durability capability to ask) breaks
determinism, and with a blocking store it can wedge the workflow task for ever. The engines are
only consulted when they are already imported, so the core stays free of them.
"""

from __future__ import annotations

import sys

from ..base import WorkflowCodeIOError

__all__ = ('refuse_workflow_code',)


def refuse_workflow_code(operation: str) -> None:
    """Raise if called from Temporal or DBOS workflow code rather than an activity or step.

    Raises:
        WorkflowCodeIOError: With the fix: use the `TemporalDurability()` / `DBOSDurability()`
            capability, which runs the operation as an activity or step.
    """
    engine = _workflow_engine()
    if engine is None:
        return
    capability = 'TemporalDurability()' if engine == 'Temporal' else 'DBOSDurability()'
    raise WorkflowCodeIOError(
        f'StepPersistence.{operation} was called inline in {engine} workflow code, where store I/O would '
        f'break replay. Add the `{capability}` capability to the agent (instead of the deprecated '
        f'`{engine}Agent` wrapper) so persistence runs as a durable {"activity" if engine == "Temporal" else "step"}.'
    )


def _workflow_engine() -> str | None:
    if 'temporalio.workflow' in sys.modules:
        from temporalio import workflow

        if workflow.in_workflow():
            return 'Temporal'
    if 'dbos' in sys.modules:
        from dbos import DBOS

        if DBOS.workflow_id is not None and DBOS.step_id is None:
            return 'DBOS'
    return None
