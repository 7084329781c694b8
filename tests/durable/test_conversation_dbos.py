"""`DBOSConversationStore`: load -> run -> save in a DBOS workflow, across a real crash inside the save step.

`_conversation_crash_app.py` runs the 7-turn loop (a 4-message window loaded per turn, turn 7
recalling turn 1's detail from the conversation store) in a subprocess that ends itself with
`os._exit` right after the second save committed, before DBOS checkpointed the step. A second
subprocess launches DBOS on the same system database, which recovers the workflow: the recorded
load and agent steps return their outputs, and the save step runs again, finds its own commit and
answers as the first attempt would have. Then it runs the loop uncrashed as the reference.
Asserted: the recovered conversation stores exactly what the clean one does (no duplicate entry,
no branch), each save committed once, and the step names (compatibility data) are pinned.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from durable_recall.dbos import DBOSConversationStore

from .._services.dbos import DBOSSystemDB, dbos_step_names, reexecute_workflow
from ._conversation_titles import HAS_UPDATE, LosingTitleStore, check_titles, title_twice
from ._persistence import STORE_DIR
from ._recall_script import DETAIL, TURNS, quoted_search

REPO_ROOT = Path(__file__).resolve().parents[2]
CRASH_EXIT_CODE = 19


def run_app(mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, '-m', 'tests.durable._conversation_crash_app', mode, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def masked(outputs: list[str], conversation_id: str) -> str:
    """The quoted search answer without what differs between two conversations: their ids and times."""
    answer = quoted_search(outputs).replace(conversation_id, '<conversation>')
    return re.sub(r'\d{4}-\d\d-\d\d \d\d:\d\d UTC', '<time>', answer)


def test_recovery_after_a_crash_inside_the_save_step(dbos_system_db: DBOSSystemDB, tmp_path: Path) -> None:
    crashed, clean = f'conv-crashed-{uuid.uuid4()}', f'conv-clean-{uuid.uuid4()}'
    common = ['--system-db', dbos_system_db.url, '--store', str(tmp_path / 'conversations.db')]
    common += ['--crash-exit-code', str(CRASH_EXIT_CODE), '--workflow-id', f'crash-{uuid.uuid4()}']
    common += ['--conversation', crashed]

    first = run_app('crash', *common)
    assert first.returncode == CRASH_EXIT_CODE, first.stderr

    out = tmp_path / 'out.json'
    reference = ['--clean-workflow-id', f'clean-{uuid.uuid4()}', '--clean-conversation', clean]
    second = run_app('recover', *common, *reference, '--out', str(out))
    assert second.returncode == 0, second.stderr
    result = json.loads(out.read_text())

    assert DETAIL in quoted_search(result['recovered'])
    assert masked(result['recovered'], crashed) == masked(result['clean'], clean)
    recovered_ids, recovered_parts, recovered_branches = result['recovered_store']
    clean_ids, clean_parts, clean_branches = result['clean_store']
    assert recovered_branches == clean_branches == []
    assert len(recovered_ids) == len(set(recovered_ids)) == len(clean_ids) == 2 * len(TURNS) + 2
    assert [p for p in recovered_parts if p in TURNS] == [p for p in clean_parts if p in TURNS] == TURNS
    # Turns 1 and 2 were committed by the crashed process; recovery re-ran save 2, which found its own
    # commit and wrote nothing, then wrote turns 3 to 7.
    assert result['writes'] == {crashed: len(TURNS) - 2, clean: len(TURNS)}

    load, save = (f'durable_recall__conversation_store__support.{op}' for op in ('load', 'save'))
    steps = result['steps']
    assert steps.count(load) == steps.count(save) == len(TURNS)
    assert steps[0] == load and steps[-1] == save
    assert 'conversation_dbos__capability__conversation_search.search' in steps


TITLE_STORE = LosingTitleStore(STORE_DIR / 'conversation-titles-dbos.db')
TITLES = DBOSConversationStore(
    TITLE_STORE, name='titles', step_config={'retries_allowed': True, 'max_attempts': 3, 'interval_seconds': 0.01}
)


@DBOS.workflow(name='durable_recall_tests.dbos_conversation_titles')
async def conversation_titles(conversation_id: str) -> list[Any]:
    """Titles a conversation as an agent would, then as a second agent would (which must not replace it)."""
    return await title_twice(TITLES, conversation_id)


def test_the_step_names_are_pinned() -> None:
    # Compatibility data: renaming them strands workflows in flight.
    assert (TITLES.load_step_name, TITLES.save_step_name, TITLES.update_step_name) == (
        'durable_recall__conversation_store__titles.load',
        'durable_recall__conversation_store__titles.save',
        'durable_recall__conversation_store__titles.update',
    )


@pytest.mark.anyio
@pytest.mark.skipif(not HAS_UPDATE, reason='ConversationStore.update needs pydantic-ai-slim>=2.78')
async def test_update_is_a_step_retried_and_recovered(dbos: DBOS, dbos_system_db: DBOSSystemDB) -> None:
    conversation_id = f'titled-{dbos_system_db.kind}-{uuid.uuid4()}'
    messages = [ModelRequest(parts=[UserPromptPart('plan a trip')]), ModelResponse(parts=[TextPart('ok')])]
    await TITLE_STORE.save(Conversation(conversation_id=conversation_id, messages=list(messages)))
    TITLE_STORE.lose_answer.add(conversation_id)  # the first update commits, then its answer is lost
    workflow_id = f'titles-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        said = await conversation_titles(conversation_id)

    await check_titles(said, conversation_id, TITLE_STORE)

    steps = await dbos_step_names(workflow_id)
    assert steps == ['durable_recall__conversation_store__titles.update'] * 3
    assert await reexecute_workflow(workflow_id) == said
    assert TITLE_STORE.details_writes[conversation_id] == 2, 'recovery returned the recorded steps, wrote nothing'
    assert await dbos_step_names(workflow_id) == steps
