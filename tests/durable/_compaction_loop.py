"""A single-run tool loop (100 steps by default) for the durable compaction tests, replayable from its messages.

Replay needs a model whose reply depends only on what it is sent: the next step number is one past
the newest `call-<n>` in the history (the window always keeps the newest tool cycle), and after
the last step it searches for what step 1 returned and quotes the answer.
"""

from __future__ import annotations

import os
import re

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.compaction._loop import DETAIL_QUERY

STEPS = int(os.environ.get('DR_LOOP_STEPS', '100'))


def loop_reply(messages: list[ModelMessage], info: AgentInfo, steps: int = STEPS) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    for part in last.parts:
        if isinstance(part, ToolReturnPart) and part.tool_name == 'search_conversation_history':
            return ModelResponse(parts=[TextPart(f'QUOTE<<{part.content}>>')])
    newest = max(
        (
            int(match.group(1))
            for message in messages
            for part in message.parts
            if isinstance(part, ToolCallPart) and (match := re.fullmatch(r'call-(\d+)', part.tool_call_id))
        ),
        default=0,
    )
    if newest < steps:
        n = newest + 1
        return ModelResponse(parts=[ToolCallPart('step', {'n': n}, tool_call_id=f'call-{n}')])
    return ModelResponse(
        parts=[ToolCallPart('search_conversation_history', {'query': DETAIL_QUERY}, tool_call_id='call-search')]
    )


def loop_model(steps: int = STEPS) -> FunctionModel:
    """The loop's model: `steps` calls of `step`, then the search, then the quote."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return loop_reply(messages, info, steps)

    return FunctionModel(reply, model_name='durable-loop')
