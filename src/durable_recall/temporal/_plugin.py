"""`DurableRecallPlugin`: pass durable-recall through Temporal's workflow sandbox.

Temporal runs workflow code in a sandbox that re-imports every module a workflow module imports,
for each workflow run (and for every workflow task when the run is not cached), except the modules
it is told to pass through. pydantic-ai's `PydanticAIPlugin` passes `pydantic_ai` and its own
dependencies through, but not third-party libraries, so without this plugin a workflow module that
does `from durable_recall import ...` re-imports the whole library, and the store drivers it loads
(`sqlite3`, psycopg and its pool), inside every sandbox. That works, but costs time and memory on
every workflow task, and gives workflow code classes that are not the ones the worker's activities
use.

Passing durable-recall through is safe because nothing in it decides workflow behaviour at import:
importing it has no side effects, and its I/O (store reads and writes, clocks, ids) happens only
inside durable operations, which `TemporalDurability()` runs as activities, outside the sandbox.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

__all__ = ('SANDBOX_PASSTHROUGH_MODULES', 'DurableRecallPlugin', 'with_durable_recall_passthrough')

SANDBOX_PASSTHROUGH_MODULES: tuple[str, ...] = ('durable_recall',)
"""The modules (with their submodules) that workflow code takes from the worker process."""


def with_durable_recall_passthrough(runner: WorkflowRunner | None, extra_modules: Sequence[str] = ()) -> WorkflowRunner:
    """`runner` with durable-recall (and `extra_modules`) added to its sandbox passthrough modules.

    Composes with whatever configured the runner before (pydantic-ai's plugin, an application's
    own restrictions): the passthrough set only grows. A runner that does not sandbox (for
    example `UnsandboxedWorkflowRunner`) has nothing to pass through and is returned unchanged.

    Args:
        runner: The runner a worker or replayer would use; `None` means Temporal's default,
            a `SandboxedWorkflowRunner` with the default restrictions.
        extra_modules: More modules to pass through, e.g. one that builds your agents and store,
            so that the sandbox does not build them again for every workflow run.
    """
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner
    restrictions = runner.restrictions.with_passthrough_modules(*SANDBOX_PASSTHROUGH_MODULES, *extra_modules)
    return dataclasses.replace(runner, restrictions=restrictions)


class DurableRecallPlugin(SimplePlugin):
    """A Temporal worker (and replayer) plugin: workflow code imports durable-recall from the host.

    Add it next to pydantic-ai's `PydanticAIPlugin`, either on the client (workers made from it
    inherit it; a replayer does not) or on each worker and replayer, not on both (temporalio warns
    when one plugin type comes from the client and the worker):

        client = await Client.connect('localhost:7233', plugins=[PydanticAIPlugin(), DurableRecallPlugin()])

    Then a workflow module can import durable-recall at top level, without
    `workflow.unsafe.imports_passed_through()`, and build its agent (with `StepPersistence`,
    `ConversationSearch` and `TemporalDurability()`) at module level. Either plugin may come first:
    each adds its modules to the sandbox passthrough set of the runner the other left.

    Args:
        passthrough_modules: More modules to pass through the sandbox, for example the module that
            builds your agent and store: Temporal otherwise re-executes it in the sandbox for every
            workflow run, building a throwaway copy of the agent (and opening the store) each time.
            Only pass through modules whose import has no side effects that workflow code relies on.
    """

    def __init__(self, *, passthrough_modules: Sequence[str] = ()) -> None:
        _check_module_names(passthrough_modules)
        self.passthrough_modules: tuple[str, ...] = tuple(passthrough_modules)
        extra = self.passthrough_modules

        def workflow_runner(runner: WorkflowRunner | None) -> WorkflowRunner:
            return with_durable_recall_passthrough(runner, extra)

        super().__init__(  # pyright: ignore[reportUnknownMemberType]
            'DurableRecallPlugin', workflow_runner=workflow_runner
        )


def _check_module_names(names: object) -> None:
    # A bare string is a sequence too: 'myapp' would pass through 'm', 'y', 'a' and 'p'.
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f'passthrough_modules must be a sequence of module names, got {names!r}')
    for name in names:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(name, str) or not name:
            raise TypeError(f'passthrough_modules must hold non-empty module names, got {name!r}')
