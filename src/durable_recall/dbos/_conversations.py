"""`DBOSConversationStore`: a conversation store whose `load` and `save` are DBOS steps in workflow code.

In a `@DBOS.workflow()` function:

    conversation = await conversations.load(conversation_id) or Conversation(conversation_id=conversation_id)
    result = await agent.run(prompt, conversation=conversation)
    await conversations.save(result)

`load` is the step `durable_recall__conversation_store__<name>.load` and `save` the step
`durable_recall__conversation_store__<name>.save` (compatibility data, pinned in tests). DBOS records
each step's output, so a recovered workflow gets the conversation the first execution loaded and the
answer of a save that completed. A process that dies inside the save step, after the commit and
before DBOS checkpointed the step, runs it again on recovery: the save is keyed by the agent run's
id, which `DBOSDurability()` derives from the workflow, so the second attempt recognises the first
one's commit and answers as it would have.

DBOS registers steps when they are defined, so build the wrapper (like the agent) before
`DBOS.launch()`, once per process, at module level.
"""

from __future__ import annotations

from typing import Any

from dbos import DBOS
from pydantic_ai.conversation_store import ConversationStore
from pydantic_ai.durable_exec.dbos import StepConfig

from ..conversations import (
    ConversationSaved,
    DurableConversationStore,
    LoadConversation,
    LoadedConversation,
    SaveConversation,
)

__all__ = ('DBOSConversationStore',)


class DBOSConversationStore(DurableConversationStore):
    """A `ConversationStore` whose `load` and `save`, called from a DBOS workflow function, are steps.

    Outside workflow code (inside a step, or in plain code) it is the wrapped store. In workflow code
    the other `ConversationStore` methods (`branch`, `fork`, `delete`, listing) raise
    `WorkflowCodeIOError`: run them in a step of your own.

    Args:
        store: The store the steps read and write.
        name: Names the steps: `durable_recall__conversation_store__<name>.load` and `.save`.
            Compatibility data: renaming it strands workflows in flight.
        step_config: DBOS step options for both steps (`retries_allowed`, `max_attempts`, ...);
            by default DBOS's (no automatic retries: the step's error reaches the workflow).
    """

    def __init__(self, store: ConversationStore, *, name: str, step_config: StepConfig | None = None) -> None:
        super().__init__(store, name=name)
        options: dict[str, Any] = dict(step_config or {})
        prefix = f'durable_recall__conversation_store__{name}'
        self.load_step_name = f'{prefix}.load'
        self.save_step_name = f'{prefix}.save'

        async def load(request: LoadConversation) -> LoadedConversation:
            return await self.load_operation(request)

        async def save(request: SaveConversation) -> ConversationSaved:
            return await self.save_operation(request)

        self._load_step = DBOS.step(name=self.load_step_name, **options)(load)
        self._save_step = DBOS.step(name=self.save_step_name, **options)(save)

    def in_workflow_code(self) -> bool:
        """True in a DBOS workflow function outside its steps."""
        return DBOS.workflow_id is not None and DBOS.step_id is None

    async def _load_durably(self, request: LoadConversation) -> LoadedConversation:
        return await self._load_step(request)

    async def _save_durably(self, request: SaveConversation) -> ConversationSaved:
        return await self._save_step(request)
