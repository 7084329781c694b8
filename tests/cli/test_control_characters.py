"""Stored text never reaches the terminal raw: control characters in messages and ids are escaped, JSON stays exact."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import SqliteStepStore, StepPersistence

from ._support import run_cli

# Recolour, rewrite the line, set the clipboard (OSC 52), a C1 CSI, DEL, a bell, a NUL-free mix.
HOSTILE = 'ZEBRA \x1b[31mred\x1b[0m \r\x1b[2Kfake line \x1b]52;c;SGVsbG8=\x07 csi\x9b31m del\x7f bell\x07'
CONVERSATION = 'conv-\x1b[1mbold\x1b[0m\nsecond-line'

_RAW = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')
"""What must never be written raw (newline and tab may be)."""


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    prompt = next(part.content for part in last.parts if isinstance(part, UserPromptPart))
    return ModelResponse(parts=[TextPart(f'echo: {prompt}')])


@pytest.fixture(scope='module')
def hostile_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    path = tmp_path_factory.mktemp('hostile') / 'store.db'

    async def write() -> str:
        store = SqliteStepStore(path)
        try:
            agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store=store)])
            result = await agent.run(HOSTILE, conversation_id=CONVERSATION)
            return result.run_id
        finally:
            await store.aclose()

    return str(path), asyncio.run(write())


COMMANDS = [
    ['conversations'],
    ['runs', '--all'],
    ['runs', '--conversation', CONVERSATION],
    ['show', 'RUN'],
    ['show', '--conversation', CONVERSATION],
    ['search', '--all', 'ZEBRA'],
    ['search', '--conversation', CONVERSATION, 'ZEBRA', '--context-lines', '0'],
    ['index', '--all'],
    ['check'],
]


@pytest.mark.parametrize('command', COMMANDS, ids=lambda command: ' '.join(command[:2]))
def test_text_output_escapes_control_characters(
    hostile_store: tuple[str, str], capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    store, run_id = hostile_store
    args = [run_id if part == 'RUN' else part for part in command]
    result = run_cli(capsys, [args[0], '--store', store, *args[1:]])
    assert result.status == 0, result.err
    assert _RAW.search(result.out) is None, repr(result.out)
    assert _RAW.search(result.err) is None
    if command[0] in ('show', 'search'):
        assert '\\x1b[31mred' in result.out and '\\x1b]52;c;' in result.out and '\\x9b31m' in result.out
        assert 'del\\x7f' in result.out
    if command[0] == 'conversations' or command == ['runs', '--all']:
        # An id's newline cannot start a row of its own: the table keeps one row per conversation.
        assert 'conv-\\x1b[1mbold\\x1b[0m\\x0asecond-line' in result.out or '…' in result.out


@pytest.mark.parametrize('command', COMMANDS, ids=lambda command: ' '.join(command[:2]))
def test_json_output_is_exact_and_has_no_raw_control_characters(
    hostile_store: tuple[str, str], capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    store, run_id = hostile_store
    args = [run_id if part == 'RUN' else part for part in command]
    result = run_cli(capsys, [args[0], '--store', store, *args[1:], '--json'])
    assert result.status == 0, result.err
    assert _RAW.search(result.out.replace('\n', '')) is None, repr(result.out)
    document = json.dumps(json.loads(result.out), ensure_ascii=False)
    if command[0] in ('show', 'search'):
        assert json.dumps(HOSTILE, ensure_ascii=False)[1:-1] in document  # the text itself, decoded back exactly


def test_error_lines_escape_what_they_quote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / 'no\x1b[31mstore.db'
    result = run_cli(capsys, ['conversations', '--store', str(missing)])
    assert result.status == 1 and _RAW.search(result.err) is None and '\\x1b[31m' in result.err
