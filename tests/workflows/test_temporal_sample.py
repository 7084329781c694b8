"""The Temporal chat sample (`workflows/temporal/`), driven against the real dev server.

In process: the worker's own `build_worker` on the test client, and the driver (`starter.main`)
holding two conversations at once with a small history budget, so each continues-as-new and the
recall in the last turn crosses workflow runs. The proof that the recall is a recall: the model
request that asked for the detail, as recorded in the workflow history (the activity's input),
does not hold the detail, and neither does the state carried across continue-as-new.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker
from workflows.conversation import CLOSING, DETAIL, STORE_VARIABLE, TURNS
from workflows.temporal import ChatReply, starter, workflow_id

from durable_recall import SqliteStepStore
from durable_recall.temporal import DurableRecallPlugin

from .._services.temporal import unique_task_queue

pytestmark = pytest.mark.anyio

MODEL_REQUEST = 'agent__support__model_request'


@pytest.fixture(scope='module')
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The SQLite store the sample's workflow module opens, named by `DURABLE_RECALL_STORE` as in a deployment.

    Module-scoped: the workflow module reads the variable when it is imported (on the host once,
    in the sandbox at every workflow run), so it must stay set while the worker runs.
    """
    assert 'workflows.temporal.workflows' not in sys.modules, 'imported before its store was configured'
    path = tmp_path_factory.mktemp('temporal-sample') / 'sample.db'
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(STORE_VARIABLE, f'sqlite:///{path}')
        yield path


@pytest.fixture(scope='module')
async def sample_worker(temporal_env: WorkflowEnvironment, sample_store: Path) -> AsyncIterator[Worker]:
    """One worker for the module's conversations (built once: the agent and its sandbox are slow to build)."""
    from workflows.temporal import worker

    async with worker.build_worker(
        temporal_env.client, task_queue=unique_task_queue('sample'), workflow_failure_exception_types=[Exception]
    ) as running:
        yield running


async def run_histories(client: Client, workflow: str) -> list[WorkflowHistory]:
    """Every run of the workflow, oldest first, following the continue-as-new chain back from the current run."""
    runs: list[WorkflowHistory] = []
    run_id: str | None = None
    while True:
        history = await client.get_workflow_handle(workflow, run_id=run_id).fetch_history()
        runs.insert(0, history)
        previous = history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
        if not previous:
            return runs
        run_id = previous


def activity_inputs(events: list[HistoryEvent], activity_type: str) -> list[bytes]:
    return [
        b''.join(payload.data for payload in event.activity_task_scheduled_event_attributes.input.payloads)
        for event in events
        if event.HasField('activity_task_scheduled_event_attributes')
        and event.activity_task_scheduled_event_attributes.activity_type.name == activity_type
    ]


async def test_chats_recall_what_left_the_context(
    temporal_env: WorkflowEnvironment, sample_worker: Worker, sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = temporal_env.client
    base = f'chat-{uuid.uuid4().hex[:8]}'
    results = await starter.main(
        client, conversations=2, conversation_id=base, task_queue=sample_worker.task_queue, history_budget=120
    )

    assert set(results) == {f'{base}-1', f'{base}-2'}
    from workflows.temporal.workflows import SupportChat

    replayer = Replayer(workflows=[SupportChat], plugins=[PydanticAIPlugin(), DurableRecallPlugin()])
    out = capsys.readouterr().out
    for conversation_id, replies in results.items():
        assert [reply.turn for reply in replies] == list(range(1, len(TURNS) + 1))
        last = replies[-1].text
        assert DETAIL in last and 'recalled it from our persisted history' in last, last
        assert f'[{conversation_id}] assistant: {last}' in out, 'the driver prints each reply, labelled'

        runs = await run_histories(client, workflow_id(conversation_id))
        assert len(runs) >= 2, 'the history budget made the conversation continue as new'
        for later in runs[1:]:
            carried = later.events[0].workflow_execution_started_event_attributes.input.payloads[0].data
            assert DETAIL.encode() not in carried, 'the window carried across continue-as-new dropped the detail'
        for run in runs:  # deterministic: every run replays from its history, updates and continue-as-new included
            await replayer.replay_workflow(run)
        requests = activity_inputs(list(runs[-1].events), MODEL_REQUEST)
        asking = [request for request in requests if CLOSING.encode() in request]
        assert len(asking) == 2, 'the question, then the answer after the search'
        assert DETAIL.encode() not in asking[0], 'the model was asked without the detail in view'
        assert DETAIL.encode() in asking[1], 'the search result brought it back'

    store = SqliteStepStore(sample_store)
    try:
        assert len(await store.list_runs(conversation_id=f'{base}-1')) == len(TURNS)
    finally:
        await store.aclose()


async def test_reusing_a_conversation_id_resumes_it_even_after_its_workflow_ended(
    temporal_env: WorkflowEnvironment, sample_worker: Worker, capsys: pytest.CaptureFixture[str]
) -> None:
    client = temporal_env.client
    conversation_id = f'resume-{uuid.uuid4().hex[:8]}'
    queue = sample_worker.task_queue
    first = await starter.main(
        client, conversation_id=conversation_id, prompts=TURNS[:6], task_queue=queue, idle_timeout=1
    )
    assert [reply.turn for reply in first[conversation_id]] == [1, 2, 3, 4, 5, 6]
    handle = client.get_workflow_handle(workflow_id(conversation_id))
    with anyio.fail_after(30):
        while (await handle.describe()).status != WorkflowExecutionStatus.COMPLETED:
            await anyio.sleep(0.2)  # idle for a second: the workflow ends, returning its state

    second = await starter.main(client, conversation_id=conversation_id, task_queue=queue)
    replies: list[ChatReply] = second[conversation_id]
    assert [reply.turn for reply in replies] == list(range(7, len(TURNS) + 1)), 'turns 1-6 are not sent again'
    assert DETAIL in replies[-1].text
    err = capsys.readouterr().err
    assert f'conversation {conversation_id} has taken 6 turns already; continuing at turn 7' in err

    again = await starter.main(client, conversation_id=conversation_id, task_queue=queue)
    assert again[conversation_id] == []
    assert 'nothing left to send' in capsys.readouterr().err


async def test_the_starter_waits_for_a_worker_and_says_so(
    temporal_env: WorkflowEnvironment, sample_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker that comes up while the starter waits: the starter says it waits, then holds the conversation."""
    from workflows.temporal import worker

    client = temporal_env.client
    queue = unique_task_queue('late-worker')
    results: list[dict[str, list[ChatReply]]] = []
    done = anyio.Event()
    said: list[str] = []

    async def start() -> None:
        results.append(await starter.main(client, prompts=TURNS[:2], task_queue=queue, worker_wait=60))
        done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(start)
        with anyio.fail_after(30):
            while not any('no worker is polling' in text for text in said):
                await anyio.sleep(0.2)
                said.append(capsys.readouterr().err)
        async with worker.build_worker(client, task_queue=queue, workflow_failure_exception_types=[Exception]):
            with anyio.fail_after(60):
                await done.wait()
    lines = ''.join([*said, capsys.readouterr().err]).splitlines()
    assert lines[0].startswith(f'starter: no worker is polling task queue {queue!r}'), lines
    assert 'starter: a worker is polling now; starting the conversation' in lines, lines
    (replies,) = results[0].values()
    assert [reply.turn for reply in replies] == [1, 2]
