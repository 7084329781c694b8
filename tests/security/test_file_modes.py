"""New SQLite stores are private: the database and its -wal and -shm files are created 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import SqliteStepStore, StepPersistence

pytestmark = pytest.mark.anyio


@pytest.fixture
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('noted')])


def _files(path: Path) -> list[Path]:
    found = [path, path.with_name(path.name + '-wal'), path.with_name(path.name + '-shm')]
    assert all(file.exists() for file in found), 'the store is in WAL mode, with both side files open'
    return found


async def test_a_new_step_store_is_private(tmp_path: Path, usual_umask: None) -> None:
    path = tmp_path / 'steps.db'
    store = SqliteStepStore(path)
    try:
        agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store)])
        await agent.run('my password is hunter2', conversation_id='c')
        assert {file.name: _mode(file) for file in _files(path)} == {
            'steps.db': 0o600,
            'steps.db-wal': 0o600,
            'steps.db-shm': 0o600,
        }
    finally:
        await store.aclose()


async def test_a_new_conversation_store_is_private(tmp_path: Path, usual_umask: None) -> None:
    pytest.importorskip('pydantic_ai.conversation_store', reason="needs pydantic-ai's conversation store API")
    from pydantic_ai.conversation import Conversation

    from durable_recall.conversations import SqliteConversationStore

    path = tmp_path / 'conversations.db'
    store = SqliteConversationStore(database=path)
    try:
        result = await Agent(FunctionModel(_reply)).run('hello', conversation=Conversation(conversation_id='c'))
        await store.save(result)
        assert {_mode(file) for file in _files(path)} == {0o600}
    finally:
        await store.aclose()


async def test_an_existing_file_keeps_its_mode(tmp_path: Path, usual_umask: None) -> None:
    path = tmp_path / 'shared.db'
    path.touch(mode=0o640)
    os.chmod(path, 0o640)
    store = SqliteStepStore(path)
    try:
        agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store)])
        await agent.run('hello', conversation_id='c')
        assert _mode(path) == 0o640
    finally:
        await store.aclose()


def test_an_unwritable_place_is_still_a_configuration_error(tmp_path: Path) -> None:
    from durable_recall.errors import StoreConfigurationError

    with pytest.raises(StoreConfigurationError, match='no-such-dir'):
        SqliteStepStore(tmp_path / 'no-such-dir' / 'x.db')
