"""StepPersistence under `DBOSDurability()`, on SQLite and PostgreSQL system databases.

The agent and the workflow are module-level: DBOS registers them once, and every test's DBOS
launch picks them up (see `tests/_services/dbos.py`).
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import (
    DBOSAgent,  # pyright: ignore[reportDeprecated]
    DBOSDurability,
)
from pydantic_ai.messages import ModelMessage

from durable_recall import SlidingWindowCompaction, StepPersistence
from durable_recall.errors import WorkflowCodeIOError
from tests._scripted import read_file, scripted_model

from .._services.dbos import DBOSSystemDB, dbos_step_names, reexecute_workflow
from ._persistence import prompts, row_counts, sqlite_store

pytestmark = pytest.mark.anyio

STORE = sqlite_store('dbos')

AGENT = Agent(
    scripted_model(),
    name='recall_dbos',
    capabilities=[StepPersistence(STORE), SlidingWindowCompaction(max_messages=8), DBOSDurability()],
)
AGENT.tool_plain(read_file)


BODY_RUNS: list[str] = []
"""One entry per execution of the workflow body, to prove a re-execution really re-ran it."""


@DBOS.workflow(name='durable_recall_tests.dbos_conversation')
async def dbos_conversation(conversation_id: str, turns: list[str]) -> list[str]:
    BODY_RUNS.append(conversation_id)
    history: list[ModelMessage] | None = None
    outputs: list[str] = []
    for prompt in turns:
        result = await AGENT.run(prompt, message_history=history, conversation_id=conversation_id)
        history = result.all_messages()
        outputs.append(result.output)
    return outputs


class TestDBOSPersistence:
    async def test_writes_are_steps_with_pinned_names(self, dbos: DBOS, dbos_system_db: DBOSSystemDB) -> None:
        workflow_id = f'persist-{dbos_system_db.kind}-{uuid.uuid4()}'
        with SetWorkflowID(workflow_id):
            await dbos_conversation(f'conv-{uuid.uuid4()}', prompts(2))
        steps = await dbos_step_names(workflow_id)
        # Compatibility data: one batched write per run, under this exact step name.
        assert [s for s in steps if 'step_persistence' in s] == [
            'recall_dbos__capability__step_persistence.save_steps'
        ] * 2
        assert steps.count('recall_dbos__model.request') == 6

    async def test_reexecution_writes_nothing_twice(self, dbos: DBOS, dbos_system_db: DBOSSystemDB) -> None:
        workflow_id = f'persist-{dbos_system_db.kind}-{uuid.uuid4()}'
        conversation_id = f'conv-{uuid.uuid4()}'
        with SetWorkflowID(workflow_id):
            first = await dbos_conversation(conversation_id, prompts(4))
        counts = await row_counts(STORE, conversation_id)
        assert (counts.runs, counts.snapshots) == (4, 16)
        steps = await dbos_step_names(workflow_id)

        # The same workflow id again returns the recorded result without running anything.
        with SetWorkflowID(workflow_id):
            assert await dbos_conversation(conversation_id, prompts(4)) == first
        assert BODY_RUNS.count(conversation_id) == 1
        # Recovery re-executes the workflow code; recorded steps return their outputs.
        assert await reexecute_workflow(workflow_id) == first
        assert BODY_RUNS.count(conversation_id) == 2
        assert await row_counts(STORE, conversation_id) == counts
        assert await dbos_step_names(workflow_id) == steps


def _deprecated_wrapper() -> Any:
    agent = Agent(scripted_model(), name='wrapped_dbos', capabilities=[StepPersistence(STORE)])
    agent.tool_plain(read_file)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the wrapper's deprecation is what this test is about
        return DBOSAgent(agent)  # pyright: ignore[reportDeprecated]


WRAPPED = _deprecated_wrapper()


@DBOS.workflow(name='durable_recall_tests.dbos_wrapped')
async def dbos_wrapped(conversation_id: str) -> str:
    return (await WRAPPED.run('hello', conversation_id=conversation_id)).output


class TestDeprecatedWrapper:
    async def test_refuses_store_io_in_workflow_code(self, dbos_sqlite: DBOS) -> None:
        with pytest.raises(WorkflowCodeIOError, match=r'inline in DBOS workflow code.*`DBOSDurability\(\)`'):
            await dbos_wrapped(f'conv-{uuid.uuid4()}')
