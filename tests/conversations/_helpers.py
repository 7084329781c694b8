"""A real pydantic-ai agent for the conversation tests: a FunctionModel that answers from the prompt."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _last_prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ''


def _echo(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(f'noted: {_last_prompt(messages)} ({len(messages)} messages seen)')])


def echo_agent() -> Agent[None, str]:
    """An agent whose answer quotes the prompt and counts the messages it was sent."""
    return Agent(FunctionModel(_echo), name='echo')


def texts(messages: list[ModelMessage]) -> list[str]:
    """Each message's user prompts and text answers, for readable assertions."""
    out: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart | TextPart) and isinstance(part.content, str):
                out.append(part.content)
    return out
