"""A single agent run that is one long tool loop, as a workflow agent's is: the model's views recorded.

The model calls `step(n)` once per request for `steps` requests, then, if asked, searches the
history for the detail step 1 returned and quotes the search's answer; every request's messages
(what the model saw) are kept in `views`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

TASK = 'TASK: audit the ledger, one step at a time'
DETAIL = 's3://acme-ZEBRA-exports/2026/ledger-7f3a.parquet'
DETAIL_QUERY = 'ZEBRA exports ledger parquet'


def step_result(n: int) -> str:
    """What `step(n)` returns: step 1 holds the detail, every result is distinct and a few words long."""
    if n == 1:
        return f'step 1 found the export at {DETAIL}'
    return f'step {n} checked batch {n * 7} of the ledger: ' + ' '.join(f'row{n}x{k}' for k in range(12))


def step(n: int) -> str:
    """The tool: one step of the task."""
    return step_result(n)


@dataclass
class LoopModel:
    """Calls `step` `steps` times, then (with `recall`) searches for the detail, then quotes what it got."""

    steps: int
    recall: bool = True
    views: list[list[ModelMessage]] = field(default_factory=list[list[ModelMessage]])

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.views.append(list(messages))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == 'search_conversation_history':
                return ModelResponse(parts=[TextPart(f'QUOTE<<{part.content}>>')])
        n = len(self.views)
        if n <= self.steps:
            return ModelResponse(parts=[ToolCallPart('step', {'n': n}, tool_call_id=f'call-{n}')])
        if self.recall:
            return ModelResponse(
                parts=[ToolCallPart('search_conversation_history', {'query': DETAIL_QUERY}, tool_call_id='call-search')]
            )
        return ModelResponse(parts=[TextPart('done')])

    def model(self) -> FunctionModel:
        return FunctionModel(self, model_name='loop')


def quoted(output: str) -> str:
    match = re.search(r'QUOTE<<(.*)>>', output, re.DOTALL)
    assert match is not None, output
    return match.group(1)


def has_task(view: list[ModelMessage]) -> bool:
    """Whether the view opens with the task's prompt."""
    first = view[0]
    return isinstance(first, ModelRequest) and any(
        isinstance(part, UserPromptPart) and part.content == TASK for part in first.parts
    )


def orphan_returns(view: list[ModelMessage]) -> list[str]:
    """Tool returns in the view whose call the view does not hold."""
    calls = {
        part.tool_call_id
        for message in view
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    return [
        part.tool_call_id
        for message in view
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_call_id not in calls
    ]


def head_changes(views: list[list[ModelMessage]]) -> int:
    """How many requests' history did not extend the previous request's (a provider cache miss)."""
    changes = 0
    for before, after in zip(views, views[1:], strict=False):
        if after[: len(before)] != before:
            changes += 1
    return changes
