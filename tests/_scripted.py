"""A scripted model and tools for agent-level tests: deterministic, offline, tool-heavy.

Each user turn makes the model call `read_file` twice (with arguments derived from the turn) and
then answer in text, so a turn is three model requests and six messages.
"""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _last_prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            # Core merges adjacent requests (a compaction marker and the prompt after it), so
            # the prompt is the last user part, not the first.
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ''


def _calls_since_prompt(messages: list[ModelMessage]) -> int:
    count = 0
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and any(isinstance(p, UserPromptPart) for p in message.parts):
            break
        if isinstance(message, ModelResponse):
            count += sum(isinstance(p, ToolCallPart) for p in message.parts)
    return count


def scripted_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Two `read_file` calls per turn, then a text answer naming the turn."""
    prompt = _last_prompt(messages)
    calls = _calls_since_prompt(messages)
    if calls < 2 and any(tool.name == 'read_file' for tool in info.function_tools):
        return ModelResponse(parts=[ToolCallPart('read_file', {'path': f'src/{prompt.replace(" ", "_")}_{calls}.py'})])
    return ModelResponse(parts=[TextPart(f'answered: {prompt}')])


def scripted_model() -> FunctionModel:
    """A fresh `FunctionModel` running `scripted_reply`."""
    return FunctionModel(scripted_reply, model_name='scripted')


def read_file(path: str) -> str:
    """Pretend to read a file: its content names the path, so every return is distinct."""
    return f'# contents of {path}\nVALUE = {len(path)}'
