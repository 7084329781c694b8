"""`DBOSConversationStore`: a conversation store whose `load`, `save` and `update` are DBOS steps in workflow code.

In a `@DBOS.workflow()` function:

    conversation = await conversations.load(conversation_id) or Conversation(conversation_id=conversation_id)
    result = await agent.run(prompt, conversation=conversation)
    await conversations.save(result)

`load` is the step `durable_recall__conversation_store__<name>.load`, `save` the step
`durable_recall__conversation_store__<name>.save` and `update` (a title or metadata,
pydantic-ai-slim>=2.78) the step `durable_recall__conversation_store__<name>.update`
(compatibility data, pinned in tests). DBOS records
each step's output, so a recovered workflow gets the conversation the first execution loaded and the
answer of a save that completed. A process that dies inside the save step, after the commit and
before DBOS checkpointed the step, runs it again on recovery: the save is keyed by the agent run's
id, which `DBOSDurability()` derives from the workflow, so the second attempt recognises the first
one's commit and answers as it would have.

DBOS registers steps when they are defined, so build the wrapper (like the agent) before
`DBOS.launch()`, once per process, at module level.
"""

from __future__ import annotations

import inspect
from typing import Any

from dbos import DBOS
from pydantic_ai.conversation_store import ConversationStore
from pydantic_ai.durable_exec.dbos import StepConfig
from pydantic_ai.exceptions import UserError

from ..base import StoreConfigurationError, WorkflowCodeIOError
from ..conversations import (
    ConversationSaved,
    CorruptConversationError,
    DurableConversationStore,
    LoadConversation,
    LoadedConversation,
    SaveConversation,
    UpdateConversation,
    UpdatedConversation,
)

__all__ = ('DBOSConversationStore',)

_NON_RETRYABLE: tuple[type[BaseException], ...] = (
    UserError,  # `ConversationConflict` too: a title that no longer matches is an answer, not a failure
    StoreConfigurationError,
    WorkflowCodeIOError,
    CorruptConversationError,
    NotImplementedError,
)
"""Errors a retry cannot fix: with `retries_allowed`, the steps raise them at once instead of retrying."""

_CAN_FILTER_RETRIES = 'should_retry' in inspect.signature(DBOS.step).parameters
"""Whether the installed DBOS lets a step say which errors it retries."""


def _should_retry(error: BaseException) -> bool:
    return not isinstance(error, _NON_RETRYABLE)


class DBOSConversationStore(DurableConversationStore):
    """A `ConversationStore` whose `load`, `save` and `update`, called from a DBOS workflow function, are steps.

    Outside workflow code (inside a step, or in plain code) it is the wrapped store. In workflow code
    the other `ConversationStore` methods (`branch`, `fork`, `delete`, listing) raise
    `WorkflowCodeIOError`: run them in a step of your own.

    Args:
        store: The store the steps read and write.
        name: Names the steps: `durable_recall__conversation_store__<name>.load`, `.save` and
            `.update`. Compatibility data: renaming it strands workflows in flight.
        step_config: DBOS step options for the steps (`retries_allowed`, `max_attempts`, ...);
            by default DBOS's (no automatic retries: the step's error reaches the workflow). With
            retries allowed, the errors a retry cannot fix (`ConversationConflict`, `UserError`,
            `NotImplementedError`, configuration and corruption errors) are not retried.
    """

    def __init__(self, store: ConversationStore, *, name: str, step_config: StepConfig | None = None) -> None:
        super().__init__(store, name=name)
        options: dict[str, Any] = dict(step_config or {})
        if _CAN_FILTER_RETRIES:
            options.setdefault('should_retry', _should_retry)
        prefix = f'durable_recall__conversation_store__{name}'
        self.load_step_name = f'{prefix}.load'
        self.save_step_name = f'{prefix}.save'
        self.update_step_name = f'{prefix}.update'

        async def load(request: LoadConversation) -> LoadedConversation:
            return await self.load_operation(request)

        async def save(request: SaveConversation) -> ConversationSaved:
            return await self.save_operation(request)

        async def update(request: UpdateConversation) -> UpdatedConversation:
            return await self.update_operation(request)

        self._load_step = DBOS.step(name=self.load_step_name, **options)(load)
        self._save_step = DBOS.step(name=self.save_step_name, **options)(save)
        self._update_step = DBOS.step(name=self.update_step_name, **options)(update)

    def in_workflow_code(self) -> bool:
        """True in a DBOS workflow function outside its steps."""
        return DBOS.workflow_id is not None and DBOS.step_id is None

    async def _load_durably(self, request: LoadConversation) -> LoadedConversation:
        return await self._load_step(request)

    async def _save_durably(self, request: SaveConversation) -> ConversationSaved:
        return await self._save_step(request)

    async def _update_durably(self, request: UpdateConversation) -> UpdatedConversation:
        return await self._update_step(request)
