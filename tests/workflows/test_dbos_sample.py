"""The DBOS chat sample (`workflows/dbos/app.py`).

As its README runs it, in a process of its own (DBOS is a process-wide singleton that the app
launches and destroys itself, and the defaults, SQLite files in the working directory, are
exercised as they are): SQLite by default, Postgres with `--postgres`, and a second run with the
same conversation id, which sends nothing again, and one after a `kill -9`, which recovers the
turn in flight and goes on. In process, with a model that records what it
is shown: the request that asked for the detail did not hold it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from workflows.conversation import CLOSING, DETAIL, STORE_VARIABLE, TURNS, last_prompt, scripted_reply, visible_text
from workflows.dbos import app

from durable_recall import PostgresStepStore, SqliteStepStore, open_store

from .._services.dbos import launched_dbos, sqlite_system_db

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_app(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)])}
    env.pop(STORE_VARIABLE, None)
    done = subprocess.run(
        [sys.executable, '-m', 'workflows.dbos.app', *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return done


def replies(output: str) -> list[str]:
    return [line for line in output.splitlines() if 'assistant: ' in line]


async def test_defaults_sqlite_and_reuse(tmp_path: Path) -> None:
    conversation_id = f'sample-{uuid.uuid4().hex[:8]}'
    output = run_app(tmp_path, '--conversation-id', conversation_id).stdout
    said = replies(output)
    assert len(said) == len(TURNS), output
    assert DETAIL in said[-1] and 'recalled it from our persisted history' in said[-1], 'recalled by search'
    assert (tmp_path / 'durable-recall-sample-dbos-system.db').is_file(), 'the DBOS system database'
    assert not (tmp_path / 'durable-recall-sample-temporal.db').exists(), "the Temporal sample's store is not touched"
    store = SqliteStepStore(tmp_path / 'durable-recall-sample-dbos.db')
    try:
        assert len(await store.list_runs(conversation_id=conversation_id)) == len(TURNS)
    finally:
        await store.aclose()

    again = run_app(tmp_path, '--conversation-id', conversation_id)
    assert replies(again.stdout) == [], 'no turn is sent twice'
    assert f'conversation {conversation_id} has taken all {len(TURNS)} turns of the script' in again.stderr
    assert 'Traceback' not in again.stderr and 'WARNING' not in again.stderr, again.stderr


async def test_postgres_flag_many_conversations(tmp_path: Path, postgres_database_url: str) -> None:
    base = f'sample-pg-{uuid.uuid4().hex[:8]}'
    args = ['--postgres', postgres_database_url, '--conversation-id', base, '--conversations', '2']
    output = run_app(tmp_path, *args).stdout
    for number in (1, 2):
        mine = [line for line in replies(output) if line.startswith(f'[{base}-{number}] ')]
        assert len(mine) == len(TURNS) and DETAIL in mine[-1], output
    assert not list(tmp_path.iterdir()), 'with --postgres nothing is written to the working directory'
    store = PostgresStepStore(postgres_database_url)
    try:
        assert len(await store.list_runs(conversation_id=f'{base}-2')) == len(TURNS)
    finally:
        await store.aclose()


async def test_killed_mid_conversation_the_next_run_recovers_the_turn_in_flight_and_goes_on(tmp_path: Path) -> None:
    """The README's walkthrough: `kill -9` a few turns in, run again with the same id."""
    conversation_id = f'crash-{uuid.uuid4().hex[:8]}'
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO_ROOT / 'src'), str(REPO_ROOT)])}
    env.pop(STORE_VARIABLE, None)
    process = subprocess.Popen(
        [sys.executable, '-m', 'workflows.dbos.app', '--conversation-id', conversation_id, '--think', '0.5'],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    answered = 0
    try:
        with anyio.fail_after(120):
            while answered < 3:
                line = await anyio.to_thread.run_sync(process.stdout.readline)
                assert line, process.stderr.read() if process.stderr else ''
                answered += line.startswith('assistant: ')
    finally:
        process.kill()  # mid-turn 4: its model request is thinking
        process.communicate(timeout=30)

    again = run_app(tmp_path, '--conversation-id', conversation_id)
    assert f'conversation {conversation_id} has taken ' in again.stderr, again.stderr
    assert 'Traceback' not in again.stderr and 'WARNING' not in again.stderr, again.stderr
    said = replies(again.stdout)
    assert DETAIL in said[-1] and 'recalled' in said[-1]
    store = SqliteStepStore(tmp_path / 'durable-recall-sample-dbos.db')
    try:
        assert len(await store.list_runs(conversation_id=conversation_id)) == len(TURNS), 'no turn lost or doubled'
    finally:
        await store.aclose()


SEEN: list[list[ModelMessage]] = []


async def recording_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The sample's scripted reply, after noting what the model was shown."""
    SEEN.append(list(messages))
    return await scripted_reply(messages, info)


def asking_requests() -> list[list[ModelMessage]]:
    """The requests that asked for the detail (the closing prompt, not the tool return after the search)."""
    return [
        messages
        for messages in SEEN
        if last_prompt(messages) == CLOSING
        and isinstance(messages[-1], ModelRequest)
        and not any(isinstance(part, ToolReturnPart) for part in messages[-1].parts)
    ]


@pytest.fixture(scope='module')
def recording_agent(tmp_path_factory: pytest.TempPathFactory) -> Agent[None, str]:
    """The sample's agent on the recording model: built once per module (DBOS registers its steps)."""
    store = open_store(f'sqlite:///{tmp_path_factory.mktemp("dbos-view") / "store.db"}')
    return app.build_agent(store, FunctionModel(recording_reply, model_name='scripted'))


async def test_the_detail_is_out_of_view_when_it_is_asked_for(
    recording_agent: Agent[None, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app.install_agent(recording_agent)
    async with launched_dbos(sqlite_system_db(tmp_path)):
        await app.register_queue()
        results = await app.talk('view')
    assert len(results) == len(TURNS)
    assert DETAIL in results[-1].reply and 'recalled' in results[-1].reply
    (asked,) = asking_requests()
    assert DETAIL not in visible_text(asked), 'the request that asked for the path could not see it'
    assert DETAIL not in visible_text(results[-2].history), 'nor could the window the last turn started from'
    assert DETAIL in capsys.readouterr().out
