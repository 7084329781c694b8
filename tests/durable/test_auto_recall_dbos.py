"""AutoRecall under `DBOSDurability()`: its search is a step, and recovery returns the recorded part."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability

from durable_recall.search import SearchEngine

from .._services.dbos import DBOSSystemDB, dbos_step_names, reexecute_workflow
from ._auto_recall_script import DETAIL, auto_capabilities, auto_model, converse, seen
from ._persistence import row_counts, sqlite_store

pytestmark = pytest.mark.anyio

STORE = sqlite_store('auto-recall-dbos')
AGENT = Agent(auto_model(), name='auto_recall_dbos', capabilities=[*auto_capabilities(STORE), DBOSDurability()])


@DBOS.workflow(name='durable_recall_tests.dbos_auto_recall')
async def dbos_auto_recall(conversation_id: str) -> list[str]:
    return await converse(AGENT, conversation_id)


async def test_recall_is_a_step_that_recovery_does_not_rerun(
    dbos: DBOS, dbos_system_db: DBOSSystemDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    searches: list[str] = []
    original = SearchEngine.rank

    async def counting(self: SearchEngine, request: Any, **kwargs: Any) -> Any:
        searches.append(request.query)
        return await original(self, request, **kwargs)

    monkeypatch.setattr(SearchEngine, 'rank', counting)
    workflow_id = f'auto-recall-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'conv-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        outputs = await dbos_auto_recall(conversation_id)
    part = seen(outputs[-1])
    assert DETAIL in part
    assert len(searches) == 7  # one a turn

    steps = await dbos_step_names(workflow_id)
    # Compatibility data: the recall is one step a turn under this name.
    assert steps.count('auto_recall_dbos__capability__auto_recall.recall') == 7, steps
    counts = await row_counts(STORE, conversation_id)

    again = await reexecute_workflow(workflow_id)
    assert isinstance(again, list)
    assert seen(again[-1]) == part
    assert len(searches) == 7, 'recovery must return the recorded recall, not search again'
    assert await row_counts(STORE, conversation_id) == counts
    assert await dbos_step_names(workflow_id) == steps
