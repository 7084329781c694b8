"""Two real OS processes titling one untitled conversation at once: exactly one title is written.

`expected_title=None` is how an agent titles a conversation without replacing a title someone set:
the check and the write must be one step in the database (SQLite: one `UPDATE ... WHERE` under the
file's write lock; Postgres: one conditional `UPDATE`, re-evaluated after the row lock), or both
processes would see no title and both write one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation

from ._helpers import echo_agent
from .conftest import ConversationKit
from .test_details import HAS_DETAILS

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not HAS_DETAILS, reason='conversation titles need pydantic-ai-slim>=2.78'),
]

_ROOT = Path(__file__).resolve().parents[2]


def _race(kit: ConversationKit, tmp_path: Path, conversation_id: str, mode: str) -> dict[str, str]:
    """Start two workers, let both read the record, then release them together: each one's outcome."""
    go = tmp_path / f'go-{conversation_id}'
    location = str(kit.sqlite_path) if kit.sqlite_path is not None else str(kit.postgres_url)
    schema = kit.postgres_schema or '-'
    names = ('ZEBRA', 'QUAGGA')
    workers = [
        subprocess.Popen(
            [sys.executable, '-m', 'tests.conversations._details_worker', kit.backend, location, schema]
            + [conversation_id, name, mode, str(go)],
            cwd=_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == 'ready'
        go.touch()
        outcomes = [worker.communicate(timeout=120)[0].strip() for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0]
    return dict(zip(names, outcomes, strict=True))


@pytest.mark.parametrize('mode', ['write_details', 'update'])
async def test_two_processes_titling_an_untitled_conversation_one_wins(
    sql_conversation_kit: ConversationKit, tmp_path: Path, mode: str
) -> None:
    kit = sql_conversation_kit
    await kit.store.save(await echo_agent().run('seed', conversation=Conversation(conversation_id='shared')))
    before = await kit.store.read_record('shared')
    assert before is not None
    outcomes = _race(kit, tmp_path, 'shared', mode)
    assert sorted(outcomes.values()) == ['conflict', 'titled']
    (winner,) = (name for name, outcome in outcomes.items() if outcome == 'titled')
    after = await kit.reopen().read_record('shared')
    assert after is not None and after.title == winner
    assert after.revision == before.revision  # a title is not a save
