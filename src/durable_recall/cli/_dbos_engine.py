"""The demo on DBOS: DBOS launched on a SQLite system database, one DBOS workflow per turn.

Each user turn is a workflow (`<conversation id>-turn-<n>`) that runs the agent; the agent carries
`DBOSDurability()`, so model requests, the search and every persistence write are DBOS steps,
recorded in the system database next to the store. DBOS registers workflows in a process-wide
registry, so the workflow is defined once, here, and finds the agent the CLI built in `_AGENTS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage

from ._engines import AgentFactory
from ._errors import CliError
from ._turn import TurnResult, turn_result

__all__ = ('dbos_conversation', 'demo_turn')

_AGENTS: dict[str, Agent[None, str]] = {}
_APP_NAME = 'durable_recall_demo'


@DBOS.workflow(name='durable_recall.demo.turn')
async def demo_turn(
    agent_name: str, prompt: str, conversation_id: str, history: list[ModelMessage] | None
) -> TurnResult:
    """One user turn as a DBOS workflow: the agent run, continuing `history`."""
    agent = _AGENTS[agent_name]
    result = await agent.run(prompt, message_history=history, conversation_id=conversation_id)
    return turn_result(result, engine_id=DBOS.workflow_id)


@asynccontextmanager
async def dbos_conversation(
    build: AgentFactory, conversation_id: str, system_db: Path
) -> AsyncGenerator[_DBOSConversation]:
    """Launch DBOS on the SQLite file `system_db`, yield the conversation, destroy DBOS."""
    agent = build(DBOSDurability())  # registers the agent's steps before launch, as DBOS requires
    assert agent.name is not None
    _AGENTS[agent.name] = agent
    loop = asyncio.get_running_loop()
    DBOS.destroy()  # an earlier instance in this process (a test, a second demo) must not linger
    try:
        DBOS(
            config={
                'name': _APP_NAME,
                'system_database_url': f'sqlite:///{system_db}',
                'enable_otlp': False,
                'log_level': 'WARNING',
                'notification_listener_polling_interval_sec': 0.05,
            }
        )
        DBOS.launch()
    except Exception as error:  # DBOS's own failure, whatever its type
        DBOS.destroy()
        raise CliError(f'DBOS did not launch on {system_db}: {error}') from error
    try:
        yield _DBOSConversation(agent.name, conversation_id, system_db)
    finally:
        _AGENTS.pop(agent.name, None)
        DBOS.destroy()
        # DBOS made its own pool this loop's default executor and shut it down on destroy.
        loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix='durable-recall-after-dbos'))


class _DBOSConversation:
    def __init__(self, agent_name: str, conversation_id: str, system_db: Path) -> None:
        self.description = f'DBOS on a SQLite system database ({system_db}), one workflow per turn'
        self._agent_name = agent_name
        self._conversation_id = conversation_id
        self._history: list[ModelMessage] | None = None
        self._turns = 0

    async def ask(self, prompt: str) -> TurnResult:
        self._turns += 1
        with SetWorkflowID(f'{self._conversation_id}-turn-{self._turns}'):
            result = await demo_turn(self._agent_name, prompt, self._conversation_id, self._history)
        self._history = result.history
        return result
