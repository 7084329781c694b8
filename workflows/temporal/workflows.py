"""The conversation workflow, and its agent, built once at module level (the worker registers its activities).

durable-recall is imported at top level, with no `workflow.unsafe.imports_passed_through()`: the
worker's `DurableRecallPlugin()` passes it through Temporal's sandbox. The store comes from
`DURABLE_RECALL_STORE` (a SQLite file by default, or a Postgres URL), read at import, so the
worker sets it before it imports this module.
"""

from __future__ import annotations

from dataclasses import replace

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage
from temporalio import workflow

from workflows.conversation import capabilities, open_store_from_env, scripted_model
from workflows.temporal import WORKFLOW_NAME, ConversationInput, ConversationResult, Turn

store = open_store_from_env()
agent = Agent(
    scripted_model(),
    name='support',
    capabilities=[*capabilities(store), TemporalDurability()],
)


@workflow.defn(name=WORKFLOW_NAME)
class LongConversation(PydanticAIWorkflow):
    """Plays a conversation turn by turn; continues as new to keep the event history bounded.

    Each turn is one agent run under the conversation's id. Compaction keeps the message history
    to a small window, and that window is all that crosses into the next run when the workflow
    continues as new: everything older is in the store, and the search tool gets it back.
    """

    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, conversation: ConversationInput) -> ConversationResult:
        history: list[ModelMessage] | None = conversation.history or None
        transcript = list(conversation.transcript)
        for index in range(conversation.next_turn, len(conversation.turns)):
            if index > conversation.next_turn and _should_continue_as_new(conversation, index):
                workflow.continue_as_new(
                    replace(conversation, next_turn=index, history=history or [], transcript=transcript)
                )
            prompt = conversation.turns[index]
            result = await agent.run(
                prompt,
                message_history=history,
                conversation_id=conversation.conversation_id,
                model=conversation.model,
            )
            history = result.all_messages()
            transcript.append(Turn(prompt=prompt, reply=result.output))
        return ConversationResult(conversation.conversation_id, transcript)


def _should_continue_as_new(conversation: ConversationInput, index: int) -> bool:
    if workflow.info().is_continue_as_new_suggested():
        return True
    every = conversation.continue_as_new_every
    return every is not None and (index - conversation.next_turn) >= every
