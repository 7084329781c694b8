"""A generic Temporal workflow that runs any registered durable agent for a few turns.

Lets a test build its agent once, in a session-scoped fixture, rather than at module level:

    @pytest.fixture(scope='session')
    def my_agent() -> Agent[None, str]:
        return register_agent(Agent(model, name='my_agent', capabilities=[..., TemporalDurability()]))

    run = await run_workflow(
        temporal_env, AgentTurnsWorkflow.run, my_agent.name, ['first', 'second'],
        workflows=[AgentTurnsWorkflow], agents=[my_agent], max_cached_workflows=0,
    )

The registry is a plain dict on the host: the test workers pass the `tests` package through the
sandbox (see `tests/_services/temporal.py`), so workflow code reads this very dict.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic_ai.agent.abstract import AbstractAgent
from pydantic_ai.messages import ModelMessage
from temporalio import workflow

AgentT = TypeVar('AgentT', bound=AbstractAgent[Any, Any])

_AGENTS: dict[str, AbstractAgent[Any, Any]] = {}


def register_agent(agent: AgentT) -> AgentT:
    """Make `agent` runnable by `AgentTurnsWorkflow` under its (unique) name; returns it."""
    name = agent.name
    assert name, 'a durable agent needs a name'
    registered = _AGENTS.setdefault(name, agent)
    assert registered is agent, f'another agent is already registered as {name!r}'
    return agent


@workflow.defn(name='durable_recall_tests.AgentTurnsWorkflow')
class AgentTurnsWorkflow:
    @workflow.run
    async def run(self, agent_name: str, prompts: list[str]) -> list[str]:
        """Run one agent turn per prompt, each continuing the previous turn's messages; return the outputs."""
        agent = _AGENTS[agent_name]
        history: list[ModelMessage] | None = None
        outputs: list[str] = []
        for prompt in prompts:
            result = await agent.run(prompt, message_history=history)
            history = result.all_messages()
            outputs.append(str(result.output))
        return outputs
