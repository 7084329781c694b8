"""`delete` and `prune` on a conversation store: the record, its unshared entries and index go, bytes and all."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from pydantic_ai.conversation import Conversation

from durable_recall import SqliteConversationStore

from ..cli._support import run_cli
from ..stores.test_erasure import file_bytes
from ._helpers import echo_agent

SECRET = 'Okapiwombatsecret'


def make_store(tmp_path: Path) -> Path:
    path = tmp_path / 'conversations.db'

    async def fill() -> None:
        store = SqliteConversationStore(path)
        agent = echo_agent()
        try:
            for conversation_id, prompt in (('secret', f'the code word is {SECRET}'), ('other', 'hello giraffe')):
                await store.save(await agent.run(prompt, conversation=Conversation(conversation_id=conversation_id)))
        finally:
            await store.aclose()

    anyio.run(fill)
    return path


def records(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[0] for row in conn.execute('SELECT conversation_id FROM drc_records ORDER BY 1')]


def test_delete_erases_a_conversation_and_its_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_store(tmp_path)
    search = run_cli(capsys, ['search', '--store', str(path), '--all', SECRET])  # the index holds it too
    assert search.status == 0 and SECRET in search.out
    assert SECRET.lower().encode() in file_bytes(path)

    run = run_cli(capsys, ['delete', '--store', str(path), '--conversation', 'secret', '--yes', '--json'])

    assert run.status == 0, run.err
    assert json.loads(run.out) == {'deleted': ['secret'], 'scrub': json.loads(run.out)['scrub']}
    assert json.loads(run.out)['scrub']['complete'] is True
    assert records(path) == ['other']
    assert SECRET.lower().encode() not in file_bytes(path)
    refused = run_cli(capsys, ['delete', '--store', str(path), '--run', 'x', '--yes'])
    assert refused.status == 1 and 'conversation store' in refused.err


def test_prune_deletes_records_saved_before_the_age(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_store(tmp_path)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("UPDATE drc_records SET updated_at = '2020-01-01T00:00:00+00:00' WHERE conversation_id = 'secret'")
        conn.commit()

    dry = run_cli(capsys, ['prune', '--store', str(path), '--idle-for', '90d', '--dry-run', '--json'])
    assert dry.status == 0, dry.err
    assert json.loads(dry.out) == {'would_delete': ['secret (last saved 2020-01-01 00:00 UTC)']}
    pruned = run_cli(capsys, ['prune', '--store', str(path), '--idle-for', '90d', '--yes'])
    assert pruned.status == 0, pruned.err
    assert records(path) == ['other']
    assert SECRET.lower().encode() not in file_bytes(path)
