"""`delete` and `prune` on a step store: what they say first, when they ask, and what is gone after."""

from __future__ import annotations

import io
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from durable_recall import SqliteStepStore

from ..stores.test_erasure import SECRET, file_bytes, write_plain, write_secret
from ._support import run_cli

DAY_MICROS = 86_400 * 1_000_000


class Terminal(io.StringIO):
    """stdin as a terminal on which the user types `answer`."""

    def isatty(self) -> bool:
        return True


def make_store(tmp_path: Path) -> Path:
    path = tmp_path / 'store.db'

    async def fill() -> None:
        store = SqliteStepStore(path)
        try:
            await write_secret(store, 'secret', 'run-secret')
            await write_plain(store, 'other', 'run-other')
            await write_plain(store, 'other', 'run-other-2')
        finally:
            await store.aclose()

    anyio.run(fill)
    return path


def conversations(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[0] for row in conn.execute('SELECT DISTINCT conversation_id FROM dr_runs ORDER BY 1')]


def test_delete_without_a_terminal_needs_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_store(tmp_path)
    monkeypatch.setattr('sys.stdin', io.StringIO('y\n'))  # not a terminal: a piped "y" is not an answer
    run = run_cli(capsys, ['delete', '--store', str(path), '--conversation', 'secret'])
    assert run.status == 1
    assert "will delete conversation 'secret': 1 run(s) (run-secret)" in run.err
    assert 'pass --yes' in run.err
    assert conversations(path) == ['other', 'secret']


@pytest.mark.parametrize(('answer', 'deleted'), [('n\n', False), ('\n', False), ('y\n', True)])
def test_delete_asks_on_a_terminal(
    answer: str, deleted: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_store(tmp_path)
    monkeypatch.setattr('sys.stdin', Terminal(answer))
    run = run_cli(capsys, ['delete', '--store', str(path), '--conversation', 'secret'])
    assert 'Proceed? [y/N]' in run.err
    if deleted:
        assert run.status == 0, run.err
        assert "deleted conversation 'secret': 1 run(s)" in run.out and 'scrubbed:' in run.out
        assert conversations(path) == ['other']
        assert SECRET.lower().encode() not in file_bytes(path)
    else:
        assert run.status == 1 and 'nothing deleted' in run.err
        assert conversations(path) == ['other', 'secret']


def test_delete_a_run_with_yes_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_store(tmp_path)
    run = run_cli(capsys, ['delete', '--store', str(path), '--run', 'run-other', '--yes', '--json'])
    assert run.status == 0, run.err
    report = json.loads(run.out)
    assert report['deleted_runs'] == ['run-other'] and report['scrub']['complete'] is True
    assert "will delete run 'run-other' of conversation 'other': its 2 snapshot(s)" in run.err
    with closing(sqlite3.connect(path)) as conn:
        assert [row[0] for row in conn.execute('SELECT run_id FROM dr_runs ORDER BY 1')] == [
            'run-other-2',
            'run-secret',
        ]


def test_delete_names_what_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_store(tmp_path)
    run = run_cli(capsys, ['delete', '--store', str(path), '--run', 'nope', '--yes'])
    assert run.status == 1 and "no run 'nope'" in run.err
    run = run_cli(capsys, ['delete', '--store', str(path), '--conversation', 'nope', '--yes'])
    assert run.status == 1 and "no conversation 'nope'" in run.err


def age(path: Path, conversation_id: str, days: int) -> None:
    """Move a conversation's activity `days` into the past."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            'UPDATE dr_runs SET started_at = started_at - ? WHERE conversation_id = ?',
            (days * DAY_MICROS, conversation_id),
        )
        conn.execute(
            'UPDATE dr_snapshots SET saved_at = saved_at - ? WHERE run_id IN'
            ' (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
            (days * DAY_MICROS, conversation_id),
        )
        conn.commit()


def test_prune_dry_run_then_prune_then_nothing_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_store(tmp_path)
    age(path, 'secret', 100)

    dry = run_cli(capsys, ['prune', '--store', str(path), '--idle-for', '90d', '--dry-run', '--json'])
    assert dry.status == 0, dry.err
    [listed] = json.loads(dry.out)['would_delete']
    assert listed.startswith('secret (last active ')
    assert conversations(path) == ['other', 'secret']

    pruned = run_cli(capsys, ['prune', '--store', str(path), '--idle-for', '90d', '--yes'])
    assert pruned.status == 0, pruned.err
    assert 'deleted 1 conversation(s), 1 run(s)' in pruned.out and 'scrubbed:' in pruned.out
    assert conversations(path) == ['other']
    assert SECRET.lower().encode() not in file_bytes(path)

    again = run_cli(capsys, ['prune', '--store', str(path), '--idle-for', '90d', '--yes'])
    assert again.status == 0 and 'no conversation idle for 90d' in again.out


@pytest.mark.parametrize('idle_for', ['90', '0d', 'd', '-3d', '5y'])
def test_prune_refuses_a_bad_age(idle_for: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_cli(capsys, ['prune', '--store', str(tmp_path / 'x.db'), f'--idle-for={idle_for}'])
    assert run.status == 2 and 'like 90d' in run.err


def test_delete_of_a_conversation_with_only_journal_keys_deletes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A conversation kept in a conversation store has no runs in the step store that holds its keys.
    path = make_store(tmp_path)

    async def make_keys() -> str:
        store = SqliteStepStore(path)
        try:
            first = await store.conversation_key('chat-only')
            await store.rotate_conversation_key('chat-only')
            return first.key_id
        finally:
            await store.aclose()

    key_id = anyio.run(make_keys)
    run = run_cli(capsys, ['delete', '--store', str(path), '--conversation', 'chat-only', '--yes', '--json'])
    assert run.status == 0, run.err
    report = json.loads(run.out)
    assert report['deleted_runs'] == [] and report['deleted_keys'] == 2 and report['scrub']['complete'] is True
    assert "conversation 'chat-only' has no runs here: will delete its journal keys" in run.err

    async def key_after() -> object:
        store = SqliteStepStore(path)
        try:
            return await store.conversation_key_by_id(key_id)
        finally:
            await store.aclose()

    assert anyio.run(key_after) is None
    again = run_cli(capsys, ['delete', '--store', str(path), '--conversation', 'chat-only', '--yes'])
    assert again.status == 1 and "no conversation 'chat-only'" in again.err and 'no journal keys' in again.err
