"""Core compaction (pydantic-ai 2.78+) in a DBOS workflow: recovery re-runs it and stores nothing twice.

The loop of `_core_compaction` runs as a DBOS workflow, on SQLite and PostgreSQL system databases:
`SlidingWindowCompaction` (or `ToolResultClearing`) answers core's requests (asked from workflow
code, and after the model's context overflows). Then the same workflow id is started again (DBOS
returns the recorded result) and the workflow is flipped back to `PENDING` and recovered (DBOS
re-executes its code, every recorded step returning its recorded output). Each time: the same
answer and compactions, the same rows, every message stored once, and the record holding each
message and each compaction's part once.

The agent and the workflow are module-level: DBOS registers them once (see `tests/_services/dbos.py`).
"""

from __future__ import annotations

import uuid

import pytest
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.usage import UsageLimits

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore, StepPersistence
from durable_recall.compaction._summary import CORE_COMPACTION
from tests.compaction._loop import DETAIL, TASK, step, step_result

from .._services.dbos import DBOSSystemDB, reexecute_workflow
from ._core_compaction import RequestEvery, clearing, core_model, log_rows, produced, record_texts, window
from ._persistence import STORE_DIR, row_counts

if not CORE_COMPACTION:
    pytest.skip('pydantic-ai before 2.78 has no core compaction protocol', allow_module_level=True)

pytestmark = pytest.mark.anyio

DATABASE = STORE_DIR / 'core-compaction-dbos.db'
STORE = SqliteStepStore(DATABASE)


def _agent(kind: str) -> Agent[None, str]:
    agent = Agent(
        core_model(cleared=kind == 'clearing'),
        name=f'core_compaction_dbos_{kind}',
        capabilities=[
            StepPersistence(store=STORE),
            ConversationSearch(SnapshotHistorySource(STORE), scope='conversation'),
            RequestEvery(),
            window() if kind == 'window' else clearing(),
            DBOSDurability(),
        ],
    )
    agent.tool_plain(step)
    return agent


AGENTS = {'window': _agent('window'), 'clearing': _agent('clearing')}

BODY_RUNS: list[str] = []
"""One entry per execution of the workflow body, to prove a re-execution really re-ran it."""


@DBOS.workflow(name='durable_recall_tests.core_compaction_loop')
async def core_compaction_loop(conversation_id: str, kind: str) -> list[str]:
    BODY_RUNS.append(conversation_id)
    result = await AGENTS[kind].run(TASK, conversation_id=conversation_id, usage_limits=UsageLimits(request_limit=None))
    return [
        result.output,
        *(f'{c.handler} {c.reason} {c.messages_before}->{c.messages_after}' for c in result.compactions),
    ]


async def _check_store(conversation_id: str, compactions: int) -> None:
    counts = await row_counts(STORE, conversation_id)
    assert log_rows(DATABASE, conversation_id) == counts.messages, 'every message stored once'
    conversation, summaries = await record_texts(STORE, conversation_id)
    assert conversation[: len(produced())] == produced()
    assert len(summaries) == compactions


@pytest.mark.timeout(300)
@pytest.mark.parametrize('kind', ['window', 'clearing'])
async def test_recovery_of_a_core_compacted_loop_stores_nothing_twice(
    dbos: DBOS, dbos_system_db: DBOSSystemDB, kind: str
) -> None:
    workflow_id = f'core-compaction-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'core-loop-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        first = await core_compaction_loop(conversation_id, kind)
    assert DETAIL in first[0] and step_result(1) in first[0], 'the run recalls what a compaction took out'
    compactions = first[1:]
    assert any('manual' in c for c in compactions) and any('context_overflow' in c for c in compactions)
    await _check_store(conversation_id, len(compactions))
    counts = await row_counts(STORE, conversation_id)

    # The same workflow id again returns the recorded result without running anything.
    with SetWorkflowID(workflow_id):
        assert await core_compaction_loop(conversation_id, kind) == first
    assert BODY_RUNS.count(conversation_id) == 1
    # Recovery re-executes the workflow code, compactions included; recorded steps return their outputs.
    assert await reexecute_workflow(workflow_id) == first
    assert BODY_RUNS.count(conversation_id) == 2
    assert await row_counts(STORE, conversation_id) == counts
    await _check_store(conversation_id, len(compactions))
