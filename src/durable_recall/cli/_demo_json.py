"""`durable-recall demo --json`: one demo turn as data, with stable field names.

Apart from the demo's printing so that scripts (and tests) read the story without parsing it:
each turn's run, its prompt and answer, and the searches the agent made with their answers.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturnPart

from ..text import SEARCH_TOOL_NAME
from ._turn import TurnResult

__all__ = ('turn_json',)


def turn_json(number: int, prompt: str, result: TurnResult) -> dict[str, Any]:
    """The turn as a JSON object: `turn`, `run_id`, `prompt`, `output`, `new_messages`, `searches`."""
    calls: dict[str, dict[str, Any]] = {}
    for message in result.new_messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_name == SEARCH_TOOL_NAME:
                    calls[part.tool_call_id] = {'arguments': part.args_as_dict(), 'answer': None}
        else:
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_call_id in calls:
                    calls[part.tool_call_id]['answer'] = str(part.content)
    return {
        'turn': number,
        'run_id': result.run_id,
        'engine_id': result.engine_id,
        'prompt': prompt,
        'output': result.output,
        'new_messages': len(result.new_messages),
        'searches': list(calls.values()),
    }
