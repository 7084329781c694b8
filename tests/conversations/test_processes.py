"""Two real OS processes saving one conversation: one wins, the other conflicts; nothing lost or interleaved."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation

from ._helpers import echo_agent, texts
from .conftest import ConversationKit

pytestmark = pytest.mark.anyio

_ROOT = Path(__file__).resolve().parents[2]


def _spawn(kit: ConversationKit, name: str, turns: int, go: Path) -> subprocess.Popen[str]:
    location = str(kit.sqlite_path) if kit.sqlite_path is not None else str(kit.postgres_url)
    schema = kit.postgres_schema or '-'
    return subprocess.Popen(
        [sys.executable, '-m', 'tests.conversations._worker', kit.backend, location, schema, 'shared', name, str(turns)]
        + [str(go)],
        cwd=_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def _race(kit: ConversationKit, tmp_path: Path, turns: int) -> list[str]:
    """Start two workers, let both load, then release them together; their last lines."""
    go = tmp_path / f'go-{turns}'
    workers = [_spawn(kit, name, turns, go) for name in ('alpha', 'beta')]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == 'loaded'
        go.touch()
        outputs = [worker.communicate(timeout=120)[0].strip() for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0]
    return outputs


async def _seed(kit: ConversationKit) -> None:
    result = await echo_agent().run('seed', conversation=Conversation(conversation_id='shared'))
    await kit.store.save(result)


async def _entry_count(kit: ConversationKit) -> int:
    return (await kit.query('SELECT COUNT(*) FROM {entries}'))[0][0]


async def test_two_processes_from_one_revision_one_wins(sql_conversation_kit: ConversationKit, tmp_path: Path) -> None:
    kit = sql_conversation_kit
    await _seed(kit)
    outcomes = _race(kit, tmp_path, 0)
    assert sorted(outcomes) == ['conflict', 'saved']
    winner = 'alpha' if outcomes[0] == 'saved' else 'beta'
    loaded = await kit.reopen().load('shared')
    assert loaded is not None
    assert [text.split(' (')[0] for text in texts(loaded.messages)] == [
        'seed',
        'noted: seed',
        f'{winner} turn',
        f'noted: {winner} turn',
    ]
    assert await _entry_count(kit) == 4  # the loser's entries were rolled back with its record


async def test_two_processes_retrying_lose_nothing(sql_conversation_kit: ConversationKit, tmp_path: Path) -> None:
    kit = sql_conversation_kit
    await _seed(kit)
    turns = 8
    outcomes = _race(kit, tmp_path, turns)
    conflicts = sum(int(line.split()[-1]) for line in outcomes)
    loaded = await kit.reopen().load('shared')
    assert loaded is not None
    said = [text.split(' (')[0] for text in texts(loaded.messages)]
    assert len(said) == 2 + 2 * 2 * turns
    pairs = list(zip(said[::2], said[1::2], strict=True))
    assert all(answer == f'noted: {prompt}' for prompt, answer in pairs)  # no turn interleaved with another
    for name in ('alpha', 'beta'):
        assert [prompt for prompt, _ in pairs if prompt.startswith(name)] == [f'{name} turn {i}' for i in range(turns)]
    assert await _entry_count(kit) == len(loaded.messages)  # no orphaned entries from lost saves
    assert conflicts >= 1  # they did contend: both started from the same revision
