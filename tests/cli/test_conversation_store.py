"""`conversations`, `show` and `search` on a conversation store (`drc_*` tables), and how the CLI picks the store.

A database holding only a conversation store is read as one; a database holding both stores (they
can share a file or a schema) is read as the step store unless `--kind conversations` says otherwise;
`--kind` naming a store the database lacks is an error. The store here is written by a real agent
through `SqliteConversationStore`, turn by turn with `limit` loads, with one branch.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from pydantic_ai.conversation import Conversation

from durable_recall import PostgresConversationStore, SqliteConversationStore, SqliteStepStore
from durable_recall.conversations import ConversationStoreSource

from ..conversations._helpers import echo_agent
from ._support import SUPPORT, as_shown_by_cli, populate_sync, run_cli
from .test_errors import assert_one_line_error

DETAIL = 'the vault key rotates every 17 days via cron-ZEBRA'
CONVERSATION = 'chat-7'
OTHER = 'chat-8'
PROMPTS = [f'remember: {DETAIL}', 'what is a cron job?', 'and a systemd timer?', 'which is simpler?']


async def _write(store: SqliteConversationStore | PostgresConversationStore) -> str:
    """Four turns of `CONVERSATION` (each loading 2 messages), one turn of `OTHER`, and a branch; the branch run id."""
    agent = echo_agent()
    try:
        for prompt in PROMPTS:
            conversation = await store.load(CONVERSATION, limit=2) or Conversation(conversation_id=CONVERSATION)
            await store.save(await agent.run(prompt, conversation=conversation))
        await store.save(await agent.run('hello there', conversation=Conversation(conversation_id=OTHER)))
        loaded = await store.load(CONVERSATION)
        assert loaded is not None
        branched = await store.branch(CONVERSATION, at=6, expected_revision=loaded.revision)
        await store.save(await agent.run('an edited last question', conversation=branched))
        record = await store.read_record(CONVERSATION)
        assert record is not None and len(record.branches) == 1
        return f'{CONVERSATION}#branch:{record.branches[0]}'
    finally:
        await store.aclose()


@pytest.fixture(scope='module')
def conversation_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp('cli-conversations') / 'conversations.db'
    return path, asyncio.run(_write(SqliteConversationStore(path)))


def test_conversations_lists_a_conversation_store(
    conversation_db: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = conversation_db
    listed = run_cli(capsys, ['conversations', '--store', str(path)])
    assert listed.status == 0, listed.err
    assert listed.out.splitlines()[0].split() == [
        'CONVERSATION',
        'SCOPE',
        'MESSAGES',
        'BRANCHES',
        'LAST',
        'SAVED',
        '(UTC)',
    ]
    assert '(a conversation store)' in listed.out

    document = json.loads(run_cli(capsys, ['conversations', '--store', str(path), '--json']).out)
    assert document['kind'] == 'conversations'
    rows = {row['conversation_id']: (row['messages'], row['branches']) for row in document['conversations']}
    assert rows == {CONVERSATION: (8, 1), OTHER: (2, 0)}


def test_show_prints_a_history_and_a_branch(
    conversation_db: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, branch = conversation_db
    shown = run_cli(capsys, ['show', '--store', str(path), CONVERSATION])
    assert shown.status == 0 and DETAIL in shown.out and 'an edited last question' in shown.out
    assert branch in shown.out  # the branches line names the branch as search results do

    document = json.loads(run_cli(capsys, ['show', '--store', str(path), branch, '--json']).out)
    assert document['conversation']['history'] == 'branch'
    assert [message['lines'] for message in document['record']][0] == ['User: which is simpler?']

    missing = run_cli(capsys, ['show', '--store', str(path), 'no-such-chat'])
    assert_one_line_error(missing, "no conversation 'no-such-chat'")


def test_search_answers_as_the_tool_over_the_conversation_store(
    conversation_db: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, branch = conversation_db
    found = run_cli(capsys, ['search', '--store', str(path), '--conversation', CONVERSATION, 'vault key ZEBRA'])
    assert found.status == 0, found.err
    assert DETAIL in found.out and '[score: ' in found.out and f'| run: {CONVERSATION} | ' in found.out

    document = json.loads(
        run_cli(capsys, ['search', '--store', str(path), '--all', 'which simpler', '--run', branch, '--json']).out
    )
    assert {match['run_id'] for match in document['matches']} == {branch}

    # The answer is the tool's own: the same source, the same engine.
    async def tool_answer() -> str:
        from durable_recall.index import Bm25Params
        from durable_recall.search import SearchEngine, SearchRequest
        from durable_recall.text import DEFAULT_SKIP_TOOLS

        store = SqliteConversationStore(path)
        try:
            engine = SearchEngine(
                source=ConversationStoreSource(store),
                params=Bm25Params(),
                max_matches=10,
                context_lines=5,
                max_result_bytes=16_000,
                skip_tools=DEFAULT_SKIP_TOOLS,
            )
            outcome = await engine.rank(
                SearchRequest(query='vault key ZEBRA'), scope='conversation', conversation_id=CONVERSATION
            )
            return outcome.answer(16_000)
        finally:
            await store.aclose()

    assert found.out == as_shown_by_cli(asyncio.run(tool_answer()), found.out) + '\n'

    other = run_cli(capsys, ['search', '--store', str(path), '--conversation', OTHER, 'vault', '--run', branch])
    assert_one_line_error(other, f'belongs to conversation {CONVERSATION!r}, not {OTHER!r}')


@pytest.mark.parametrize('command', [['runs', '--all'], ['check']])
def test_step_store_commands_are_refused(
    conversation_db: tuple[Path, str], command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = conversation_db
    result = run_cli(capsys, [command[0], '--store', str(path), *command[1:]])
    assert_one_line_error(result, 'is a conversation store (drc_* tables)', 'Use `conversations`')


def test_index_catches_the_conversation_store_index_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / 'fresh.db'
    asyncio.run(_write(SqliteConversationStore(path)))
    before = _index_rows(path)
    result = run_cli(capsys, ['index', '--store', str(path), '--all'])
    assert result.status == 0 and result.err == ''
    assert 'caught the search index of the whole store up' in result.out
    assert _index_rows(path) > before  # the index lives in the store's database, and now holds the conversation
    one = run_cli(capsys, ['index', '--store', str(path), '--conversation', CONVERSATION, '--json'])
    assert one.status == 0 and json.loads(one.out)['unreadable'] == []
    assert run_cli(capsys, ['index', '--store', str(path), '--conversation', 'nope']).status == 1


@pytest.mark.parametrize('flags', [['--ranking', 'hybrid'], ['--embedder', 'openai:text-embedding-3-small']])
def test_index_refuses_to_embed_into_a_conversation_store(
    conversation_db: tuple[Path, str], flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = conversation_db
    result = run_cli(capsys, ['index', '--store', str(path), '--all', *flags])
    assert_one_line_error(result, 'is a conversation store, which keeps no vectors', 'into a step store only')


def _index_rows(path: Path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        indexes = [name for name in names if name.startswith('drc_') and ('post' in name or 'index' in name)]
        assert indexes, names
        return sum(conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in indexes)


def test_a_shared_file_reads_as_the_step_store_unless_kind_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / 'shared.db'
    populate_sync(SqliteStepStore(path))
    asyncio.run(_write(SqliteConversationStore(path)))

    steps = json.loads(run_cli(capsys, ['conversations', '--store', str(path), '--json']).out)
    assert SUPPORT in [row['conversation_id'] for row in steps['conversations']] and 'kind' not in steps
    conversations = json.loads(
        run_cli(capsys, ['conversations', '--store', str(path), '--kind', 'conversations', '--json']).out
    )
    # Least recently saved first: CONVERSATION's branch was saved last.
    assert [row['conversation_id'] for row in conversations['conversations']] == [OTHER, CONVERSATION]
    assert run_cli(capsys, ['runs', '--store', str(path), '--kind', 'steps', '--conversation', SUPPORT]).status == 0


def test_kind_naming_a_missing_store_is_an_error(
    conversation_db: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = conversation_db
    result = run_cli(capsys, ['conversations', '--store', str(path), '--kind', 'steps'])
    assert_one_line_error(result, 'is not a durable-recall store', 'no dr_meta table (--kind steps)')
    empty = tmp_path / 'empty.db'
    import sqlite3

    sqlite3.connect(empty).close()
    result = run_cli(capsys, ['conversations', '--store', str(empty)])
    assert_one_line_error(result, 'no dr_meta table (step store) or drc_meta table (conversation store)')


def test_a_postgres_conversation_store(
    postgres_url: str, postgres_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    branch = asyncio.run(_write(PostgresConversationStore(postgres_url, schema=postgres_schema)))
    store = ['--store', postgres_url, '--schema', postgres_schema]
    document = json.loads(run_cli(capsys, ['conversations', *store, '--json']).out)
    assert {row['conversation_id'] for row in document['conversations']} == {CONVERSATION, OTHER}
    assert document['store'].endswith(f"(schema '{postgres_schema}')")
    assert DETAIL in run_cli(capsys, ['show', *store, CONVERSATION]).out
    found = run_cli(capsys, ['search', *store, '--conversation', CONVERSATION, 'vault key ZEBRA'])
    assert found.status == 0 and DETAIL in found.out
    assert run_cli(capsys, ['show', *store, branch]).status == 0


def test_run_alone_searches_as_its_conversation(
    conversation_db: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, branch = conversation_db
    alone = run_cli(capsys, ['search', '--store', str(path), '--run', branch, 'which simpler', '--json'])
    assert alone.status == 0, alone.err
    document = json.loads(alone.out)
    assert (document['scope'], document['conversation_id']) == ('conversation', CONVERSATION)
    assert {match['run_id'] for match in document['matches']} == {branch}
    shown = run_cli(capsys, ['show', '--store', str(path), '--conversation', CONVERSATION])
    assert shown.status == 0 and DETAIL in shown.out
