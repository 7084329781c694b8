"""The chat workflow, and its agent, built once at module level (the worker registers its activities).

durable-recall is imported at top level, with no `workflow.unsafe.imports_passed_through()`: the
worker's `DurableRecallPlugin()` passes it through Temporal's sandbox. The store and the model come
from `DURABLE_RECALL_STORE` and `DURABLE_RECALL_SAMPLE_MODEL`, read at import, so the worker sets
them before it imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityConfig

from workflows.conversation import AGENT_NAME, INSTRUCTIONS, capabilities, configured_model, open_store_from_env
from workflows.temporal import (
    ACTIVITY_TIMEOUT,
    DEFAULT_STORE,
    HEARTBEAT_TIMEOUT,
    MODEL_TIMEOUT,
    SEND_UPDATE,
    TURNS_QUERY,
    WORKFLOW_NAME,
    ChatReply,
    ChatState,
)

ACTIVITIES = ActivityConfig(
    start_to_close_timeout=ACTIVITY_TIMEOUT,
    heartbeat_timeout=HEARTBEAT_TIMEOUT,
    retry_policy=RetryPolicy(initial_interval=timedelta(seconds=0.5), maximum_interval=timedelta(seconds=10)),
)
"""Every activity: a lost worker is noticed by its missed heartbeats within `HEARTBEAT_TIMEOUT`."""

store = open_store_from_env(DEFAULT_STORE)
agent = Agent(
    configured_model(),
    name=AGENT_NAME,
    instructions=INSTRUCTIONS,
    capabilities=[
        *capabilities(store),
        TemporalDurability(
            activity_config=ACTIVITIES,
            model_activity_config=ActivityConfig(start_to_close_timeout=MODEL_TIMEOUT),
        ),
    ],
)


@workflow.defn(name=WORKFLOW_NAME)
class SupportChat(PydanticAIWorkflow):
    """One conversation, for as long as it lasts: each `send` update is one turn, one agent run.

    Turns run one at a time, in the order their updates were accepted. Compaction keeps the
    message history to a small window, and that window is all that crosses into the next run
    when the workflow continues as new (past `history_budget` events, or when Temporal suggests
    it): everything older is in the store, and the search tool gets it back. After
    `idle_timeout_seconds` without a message the workflow ends, returning its state.
    """

    __pydantic_ai_agents__ = [agent]

    @workflow.init
    def __init__(self, state: ChatState) -> None:
        self._state = state
        self._busy = False
        self._started = state.turns

    @workflow.run
    async def run(self, state: ChatState) -> ChatState:
        idle = timedelta(seconds=state.idle_timeout_seconds)
        while True:
            try:
                await workflow.wait_condition(self._wakes_after(self._started), timeout=idle)
            except TimeoutError:
                if self._busy:
                    continue
                await workflow.wait_condition(workflow.all_handlers_finished)
                return self._state
            if self._continue_as_new_due():
                # Let an update accepted meanwhile finish in this run; later ones go to the next run.
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._state)

    @workflow.update(name=SEND_UPDATE)
    async def send(self, prompt: str) -> ChatReply:
        """Take one user message, run the agent on it, return the reply."""
        self._started += 1
        await workflow.wait_condition(lambda: not self._busy)
        self._busy = True
        try:
            result = await agent.run(
                prompt,
                message_history=self._state.history or None,
                conversation_id=self._state.conversation_id,
            )
            self._state.history = result.all_messages()
            self._state.turns += 1
            return ChatReply(turn=self._state.turns, text=result.output)
        finally:
            self._busy = False

    @send.validator
    def _check_prompt(self, prompt: str) -> None:
        if not prompt.strip():
            raise ValueError('an empty message')

    @workflow.query(name=TURNS_QUERY)
    def turns(self) -> int:
        """Turns taken so far (a turn in progress not counted)."""
        return self._state.turns

    def _wakes_after(self, started: int) -> Callable[[], bool]:
        """The run loop's wait: a continue-as-new is due, or a message came (which restarts the idle clock)."""
        return lambda: self._continue_as_new_due() or self._started != started

    def _continue_as_new_due(self) -> bool:
        if self._busy:
            return False
        info = workflow.info()
        return info.is_continue_as_new_suggested() or info.get_current_history_length() >= self._state.history_budget
