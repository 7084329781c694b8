"""The search tool under `DBOSDurability()`: a DBOS step, not re-run by recovery, recall across compaction."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability

from durable_recall.search import SearchEngine

from .._services.dbos import DBOSSystemDB, dbos_step_names, reexecute_workflow
from ._persistence import row_counts, sqlite_store
from ._recall_script import DETAIL, converse, quoted_search, recall_capabilities, recall_model

pytestmark = pytest.mark.anyio

STORE = sqlite_store('search-dbos')
AGENT = Agent(recall_model(), name='recall_dbos_search', capabilities=[*recall_capabilities(STORE), DBOSDurability()])


@DBOS.workflow(name='durable_recall_tests.dbos_recall')
async def dbos_recall(conversation_id: str) -> list[str]:
    return await converse(AGENT, conversation_id)


async def test_search_is_a_step_that_recovery_does_not_rerun(
    dbos: DBOS, dbos_system_db: DBOSSystemDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    searches: list[str] = []
    original = SearchEngine.search

    async def counting(self: SearchEngine, request: Any, **kwargs: Any) -> str:
        searches.append(request.query)
        return await original(self, request, **kwargs)

    monkeypatch.setattr(SearchEngine, 'search', counting)
    workflow_id = f'recall-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'conv-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        outputs = await dbos_recall(conversation_id)
    answer = quoted_search(outputs)
    assert DETAIL in answer
    assert searches == ['ledger export ZEBRA']

    steps = await dbos_step_names(workflow_id)
    # Compatibility data: the search is one step under this name.
    assert steps.count('recall_dbos_search__capability__conversation_search.search') == 1
    counts = await row_counts(STORE, conversation_id)

    again = await reexecute_workflow(workflow_id)
    assert isinstance(again, list)
    assert quoted_search(again) == answer
    assert searches == ['ledger export ZEBRA'], 'recovery must return the recorded search, not search again'
    assert await row_counts(STORE, conversation_id) == counts
    assert await dbos_step_names(workflow_id) == steps
