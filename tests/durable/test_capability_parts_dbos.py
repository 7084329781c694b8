"""Capability parts under `DBOSDurability()`: recovery records nothing twice, and the part is recalled."""

from __future__ import annotations

import uuid

import pytest

from .._capability_parts import HAS_CAPABILITY_PARTS, NEEDS_CAPABILITY_PARTS

if not HAS_CAPABILITY_PARTS:
    pytest.skip(NEEDS_CAPABILITY_PARTS, allow_module_level=True)

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability

from .._services.dbos import DBOSSystemDB, reexecute_workflow
from ._capability_script import LABEL, REPORT, TURNS, capabilities
from ._persistence import row_counts, sqlite_store
from ._recall_script import converse, quoted_search, recall_model

pytestmark = pytest.mark.anyio

STORE = sqlite_store('capability-parts-dbos')
AGENT = Agent(recall_model(), name='capability_parts_dbos', capabilities=[*capabilities(STORE), DBOSDurability()])


@DBOS.workflow(name='durable_recall_tests.dbos_capability_parts')
async def dbos_capability_parts(conversation_id: str) -> list[str]:
    return await converse(AGENT, conversation_id, TURNS)


async def test_recovery_records_a_capability_part_once(dbos: DBOS, dbos_system_db: DBOSSystemDB) -> None:
    workflow_id = f'capability-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'conv-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        outputs = await dbos_capability_parts(conversation_id)
    answer = quoted_search(outputs)
    assert answer.count(LABEL + REPORT) == 1, answer
    counts = await row_counts(STORE, conversation_id)

    again = await reexecute_workflow(workflow_id)
    assert isinstance(again, list)
    assert quoted_search(again) == answer
    assert await row_counts(STORE, conversation_id) == counts
