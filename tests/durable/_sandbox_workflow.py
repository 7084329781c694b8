"""A workflow module written the way a user writes one: durable-recall imported at top level, one agent.

No `workflow.unsafe.imports_passed_through()` anywhere, and the agent (the SPEC.md example with
`TemporalDurability()`) is built once, at module level. The worker that runs it in
`test_sandbox.py` uses Temporal's default sandboxed runner plus the two plugins, not the test
suite's runner that passes the `tests` package through, so Temporal re-executes this module (and
`_recall_script`) inside its sandbox exactly as it would a user's module.

The store file's name depends only on the process, so the sandbox's re-execution of this module
opens the file the worker's own copy writes to (it never writes through it: every store call is an
activity, run on the worker's copy of the agent). It is built from environment variables because
the sandbox refuses `tempfile.gettempdir()`, even at import: it reads the filesystem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from temporalio import workflow

import durable_recall
from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
)

from ._recall_script import TURNS, converse, recall_model
from ._sandbox_agent import shared_agent

_TMP = next((os.environ[name] for name in ('TMPDIR', 'TEMP', 'TMP') if os.environ.get(name)), '/tmp')
STORE_PATH = Path(_TMP) / f'durable-recall-sandbox-test-{os.getpid()}.db'

store = SqliteStepStore(database=STORE_PATH)
agent = Agent(
    recall_model(),
    name='sandbox_support',
    capabilities=[
        StepPersistence(store=store),
        ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
        SlidingWindowCompaction(max_messages=6),
        TemporalDurability(),
    ],
)


@dataclass
class SandboxRun:
    outputs: list[str]
    library_from_host: bool
    """Whether workflow code saw the worker's own `durable_recall` module, not a sandbox re-import."""


@workflow.defn(name='durable_recall_tests.SandboxRecall')
class SandboxRecall(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, conversation_id: str, host_library_id: int, turns: int = len(TURNS)) -> SandboxRun:
        outputs = await converse(agent, conversation_id, TURNS[:turns])
        return SandboxRun(outputs=outputs, library_from_host=id(durable_recall) == host_library_id)


@workflow.defn(name='durable_recall_tests.SandboxSharedAgent')
class SandboxSharedAgent(PydanticAIWorkflow):
    """Runs the agent of `_sandbox_agent`; returns whether workflow code held the worker's own instance."""

    __pydantic_ai_agents__ = [shared_agent]

    @workflow.run
    async def run(self, conversation_id: str, host_agent_id: int) -> bool:
        await shared_agent.run(TURNS[0], conversation_id=conversation_id)
        return id(shared_agent) == host_agent_id
