"""Where the demo's agent runs: in process, as a Temporal workflow, or as DBOS workflows.

Every engine has the same shape, a conversation that answers one prompt per call, so the demo
renders the same turn-by-turn story whichever one ran it. The Temporal and DBOS engines live in
their own modules and are imported only when chosen, so `--engine none` needs neither extra.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage

from ._errors import CliError, install_hint
from ._parser import EngineName
from ._turn import TurnResult, turn_result

__all__ = ('AgentFactory', 'Conversation', 'start_engine')

AgentFactory: TypeAlias = Callable[[AbstractCapability[Any] | None], Agent[None, str]]
"""Builds the demo agent with the engine's durability capability (or none)."""


class Conversation(Protocol):
    """One conversation on an engine: each `ask` is one agent run continuing the previous one."""

    description: str
    """What runs the agent, for the demo's header."""

    async def ask(self, prompt: str) -> TurnResult:
        """Run the agent on `prompt` with the conversation so far; return what the run did."""
        ...


@asynccontextmanager
async def start_engine(
    name: EngineName, build: AgentFactory, conversation_id: str, dbos_system_db: Path
) -> AsyncGenerator[Conversation]:
    """Start the engine, yield a conversation on it, and stop the engine (whatever happened).

    Args:
        name: Which engine.
        build: Builds the agent; called once, with the engine's durability capability.
        conversation_id: The conversation id every run is given.
        dbos_system_db: The SQLite file DBOS keeps its system database in (DBOS only).

    Raises:
        CliError: The engine's extra is not installed, or the engine cannot start.
    """
    if name == 'none':
        yield _InProcess(build(None), conversation_id)
    elif name == 'temporal':
        try:
            from ._temporal_engine import temporal_conversation
        except ImportError as error:
            raise _missing('temporal', error) from error
        async with temporal_conversation(build, conversation_id) as conversation:
            yield conversation
    else:
        try:
            from ._dbos_engine import dbos_conversation
        except ImportError as error:
            raise _missing('dbos', error) from error
        async with dbos_conversation(build, conversation_id, dbos_system_db) as conversation:
            yield conversation


class _InProcess:
    """No engine: `agent.run` in this process, the history kept in a variable."""

    description = 'no engine (agent.run in this process)'

    def __init__(self, agent: Agent[None, str], conversation_id: str) -> None:
        self._agent = agent
        self._conversation_id = conversation_id
        self._history: list[ModelMessage] | None = None

    async def ask(self, prompt: str) -> TurnResult:
        result = await self._agent.run(prompt, message_history=self._history, conversation_id=self._conversation_id)
        self._history = result.all_messages()
        return turn_result(result)


def _missing(extra: str, error: ImportError) -> CliError:
    return CliError(
        f'--engine {extra} needs the {extra} extra ({error.name or error}): '
        f'{install_hint(extra)}, or run the demo with --engine none'
    )
