"""`delete` and `prune` on a conversation store: the record, its unshared entries and index go, bytes and all."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from pydantic_ai.conversation import Conversation

from durable_recall import ConversationSearch, PostgresConversationStore, SqliteConversationStore
from durable_recall.conversations import ConversationRecord, ConversationStoreSource, prune_idle_records
from durable_recall.search import SearchRequest

from ..cli._support import run_cli
from ..search._stub import context
from ..stores import test_postgres_restart
from ..stores.test_erasure import file_bytes, holding, relation_files
from ._helpers import echo_agent

pytestmark = pytest.mark.anyio

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


class SavedDuringListing(SqliteConversationStore):
    """A store on which a writer saves `secret` right after a listing reads its record."""

    async def read_records(self, *, scope: str | None = None, limit: int | None = None) -> Sequence[ConversationRecord]:
        found = await super().read_records(scope=scope, limit=limit)
        conversation = await self.load('secret')
        assert conversation is not None
        await self.save(await echo_agent().run('one more thing', conversation=conversation))
        return found


async def test_prune_idle_records_keeps_a_record_saved_after_the_listing(tmp_path: Path) -> None:
    path = await anyio.to_thread.run_sync(make_store, tmp_path)
    later = datetime.now(UTC) + timedelta(days=100)
    store = SqliteConversationStore(path)
    try:
        dry = await prune_idle_records(store, idle_for=timedelta(days=90), now=later, dry_run=True)
        assert sorted(c.conversation_id for c in dry.conversations) == ['other', 'secret']
        assert sorted(records(path)) == ['other', 'secret']
    finally:
        await store.aclose()

    racing = SavedDuringListing(path)
    try:
        pruned = await prune_idle_records(racing, idle_for=timedelta(days=90), now=later)
    finally:
        await racing.aclose()
    assert pruned.deleted == {'other': 1} and pruned.kept == ('secret',)
    assert pruned.scrub is not None and pruned.scrub.complete
    assert records(path) == ['secret']


private_server = test_postgres_restart.private_server
"""A throwaway cluster whose data directory this test may read."""


@pytest.mark.postgres
async def test_after_scrub_no_postgres_relation_file_holds_an_erased_conversation(
    private_server: test_postgres_restart.PrivateServer,
) -> None:
    store = PostgresConversationStore(private_server.url)
    token = SECRET.lower().encode()
    agent = echo_agent()
    try:
        for conversation_id, prompt in (('secret', f'the code word is {SECRET}'), ('other', 'hello giraffe')):
            await store.save(await agent.run(prompt, conversation=Conversation(conversation_id=conversation_id)))
        engine = ConversationSearch(ConversationStoreSource(store), scope='all')
        assert SECRET in await engine.search(context(conversation_id=None), SearchRequest(query=SECRET))  # indexed
        found = holding(await relation_files(private_server.url, private_server.data), token)
        assert found

        record = await store.read_record('secret')
        assert record is not None
        await store.delete_record('secret', expected_revision=record.revision)
        report = await store.scrub()

        assert report.complete, report
        assert holding(await relation_files(private_server.url, private_server.data), token) == []
        assert await store.read_record('other') is not None
    finally:
        await store.aclose()
