"""`TemporalConversationStore`: a conversation store whose store calls in workflow code are Temporal activities.

Workflow code loads, runs and saves as pydantic-ai documents it:

    conversation = await conversations.load(conversation_id) or Conversation(conversation_id=conversation_id)
    result = await agent.run(prompt, conversation=conversation)
    await conversations.save(result)

`load` is the activity `durable_recall__conversation_store__<name>__load`, `save` the activity
`durable_recall__conversation_store__<name>__save` and `update` (a title or metadata,
pydantic-ai-slim>=2.78) the activity `durable_recall__conversation_store__<name>__update`
(compatibility data, pinned in tests). Their inputs and results are recorded in the workflow
history, so a replay gets the conversation the first execution loaded and never touches the store.
The save is keyed by the agent run's id, which `TemporalDurability()` derives from the workflow, so
an activity retried after its commit (the answer lost to a worker crash or a timeout) recognises its
own commit instead of raising `ConversationConflict`; so does a retried `update`.

Register the activities on the worker (`Worker(..., activities=conversations.activities)`); the
workflow module builds the wrapper at module level next to the agent, as it builds the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from pydantic_ai.conversation_store import ConversationConflict, ConversationStore
from pydantic_ai.exceptions import UserError
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityConfig

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

__all__ = ('TemporalConversationStore',)

_NON_RETRYABLE: tuple[type[BaseException], ...] = (
    UserError,
    ConversationConflict,
    StoreConfigurationError,
    WorkflowCodeIOError,
    CorruptConversationError,
    NotImplementedError,
)
"""Errors a retry cannot fix. Temporal matches the raised class's exact name, so subclasses are listed too."""


class TemporalConversationStore(DurableConversationStore):
    """A `ConversationStore` whose `load`, `save` and `update`, called from Temporal workflow code, are activities.

    Outside workflow code (activities, the worker's own code, scripts) it is the wrapped store. In
    workflow code the other `ConversationStore` methods (`branch`, `fork`, `delete`, listing) raise
    `WorkflowCodeIOError`: run them in an activity of your own.

    Args:
        store: The store the activities read and write.
        name: Names the activities: `durable_recall__conversation_store__<name>__load`, `__save` and
            `__update`. Compatibility data: renaming it strands workflows in flight.
        activity_config: Options for the activities (`workflow.execute_activity` keywords);
            defaults to a 60-second `start_to_close_timeout`. The errors a retry cannot fix
            (`ConversationConflict`, `UserError`, `NotImplementedError`, configuration and corruption
            errors) are added to
            its retry policy's non-retryable types.
    """

    def __init__(self, store: ConversationStore, *, name: str, activity_config: ActivityConfig | None = None) -> None:
        super().__init__(store, name=name)
        config: ActivityConfig = (
            dict(activity_config)  # pyright: ignore[reportAssignmentType]
            if activity_config
            else ActivityConfig(start_to_close_timeout=timedelta(seconds=60))
        )
        config['retry_policy'] = _with_non_retryable(config.get('retry_policy'))
        self.activity_config: ActivityConfig = config
        prefix = f'durable_recall__conversation_store__{name}'
        self.load_activity_name = f'{prefix}__load'
        self.save_activity_name = f'{prefix}__save'
        self.update_activity_name = f'{prefix}__update'

        @activity.defn(name=self.load_activity_name)
        async def load(request: LoadConversation) -> LoadedConversation:
            return await self.load_operation(request)

        @activity.defn(name=self.save_activity_name)
        async def save(request: SaveConversation) -> ConversationSaved:
            return await self.save_operation(request)

        @activity.defn(name=self.update_activity_name)
        async def update(request: UpdateConversation) -> UpdatedConversation:
            return await self.update_operation(request)

        self._load_activity = load
        self._save_activity = save
        self._update_activity = update

    @property
    def activities(self) -> Sequence[Callable[..., Any]]:
        """The three activities, for `Worker(..., activities=[*conversations.activities, ...])`."""
        return (self._load_activity, self._save_activity, self._update_activity)

    def in_workflow_code(self) -> bool:
        """True in workflow code (`workflow.in_workflow()`), false in activities and elsewhere."""
        return workflow.in_workflow()

    async def _load_durably(self, request: LoadConversation) -> LoadedConversation:
        return await workflow.execute_activity(
            self._load_activity, request, **self._config(f'load conversation {request.conversation_id}')
        )

    async def _save_durably(self, request: SaveConversation) -> ConversationSaved:
        return await workflow.execute_activity(
            self._save_activity, request, **self._config(f'save conversation {request.conversation.conversation_id}')
        )

    async def _update_durably(self, request: UpdateConversation) -> UpdatedConversation:
        return await workflow.execute_activity(
            self._update_activity, request, **self._config(f'update conversation {request.conversation_id}')
        )

    def _config(self, summary: str) -> ActivityConfig:
        """The activity options, with a summary for the Temporal UI unless the configuration sets one."""
        config = self.activity_config.copy()
        config.setdefault('summary', summary)
        return config


def _with_non_retryable(policy: RetryPolicy | None) -> RetryPolicy:
    existing = list(policy.non_retryable_error_types or []) if policy is not None else []
    names = [error.__name__ for error in _NON_RETRYABLE if error.__name__ not in existing]
    if policy is None:
        return RetryPolicy(non_retryable_error_types=names)
    return replace(policy, non_retryable_error_types=[*existing, *names])
