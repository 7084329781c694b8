"""What a new user meets: the default store, run-id prefixes, --run alone, show --conversation, table width, help."""

from __future__ import annotations

import io
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from durable_recall.cli._demo import model_failure
from durable_recall.cli._search import LOADING_NOTE, loading_note
from durable_recall.stores._snapshot_sum import snapshot_checksum

from ._support import OTHER, SUPPORT, Populated, run_cli


class TestStoreVariable:
    def test_is_the_default_store(
        self, populated: Populated, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv('DURABLE_RECALL_STORE', f'sqlite:///{populated.store}')
        listed = run_cli(capsys, ['conversations'])
        assert listed.status == 0 and SUPPORT in listed.out
        assert run_cli(capsys, ['search', '--all', 'ZEBRA']).status == 0
        # --store still wins.
        other = run_cli(capsys, ['conversations', '--store', '/nonexistent/elsewhere.db'])
        assert other.status == 1 and 'elsewhere.db' in other.err

    def test_without_it_the_store_is_required(self, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['conversations'])
        assert result.status == 2 and 'set DURABLE_RECALL_STORE' in result.err

    def test_help_names_it(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert 'DURABLE_RECALL_STORE' in ' '.join(run_cli(capsys, ['runs', '--help']).out.split())


class TestRunIds:
    def test_a_unique_prefix_names_the_run(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        run_id = populated.support_runs[2]
        prefix = next(
            run_id[:n]
            for n in range(4, len(run_id))
            if sum(r.startswith(run_id[:n]) for runs in populated.runs.values() for r in runs) == 1
            and not populated.solo[1].startswith(run_id[:n])
        )
        whole = run_cli(capsys, ['show', '--store', populated.store, run_id])
        assert run_cli(capsys, ['show', '--store', populated.store, prefix]).out == whole.out
        found = run_cli(capsys, ['search', '--store', populated.store, '--run', prefix, 'export', '--json'])
        assert json.loads(found.out)['run_id'] == run_id

    def test_an_ambiguous_prefix_lists_the_candidates(
        self, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        first, second = populated.support_runs[:2]
        common = next(n for n in range(len(first)) if first[n] != second[n])
        result = run_cli(capsys, ['show', '--store', populated.store, first[:common]])
        assert result.status == 2 and 'is ambiguous' in result.err
        assert first in result.err and second in result.err

    def test_an_unknown_id_is_an_error(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['show', '--store', populated.store, 'no-such-run'])
        assert result.status == 1 and "no run 'no-such-run'" in result.err

    def test_runs_fits_100_columns_and_its_short_ids_work(
        self, populated: Populated, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        # Temporal's run ids are 73 characters: give the store some.
        store = tmp_path / 'long.db'
        store.write_bytes(Path(populated.store).read_bytes())
        long_id = 'support-agent-workflow-0123456789abcdef/0193f1c2-aaaa-7bbb-8ccc-0123456789ab'
        with closing(sqlite3.connect(store)) as conn, conn:
            conn.execute('UPDATE dr_runs SET run_id = ? WHERE run_id = ?', (long_id, populated.support_runs[0]))
            conn.create_function('dr_snapshot_checksum', 5, snapshot_checksum)  # a row's checksum covers its run id
            conn.execute(
                'UPDATE dr_snapshots SET run_id = ?1, checksum = dr_snapshot_checksum(?1, idx, state, ranges, size)'
                ' WHERE run_id = ?2',
                (long_id, populated.support_runs[0]),
            )
        narrow = run_cli(capsys, ['runs', '--store', str(store), '--all'])
        assert narrow.status == 0
        assert max(len(line) for line in narrow.out.splitlines()) <= 100
        cells = [line.split()[0] for line in narrow.out.splitlines()[1:] if line and '…' in line.split()[0]]
        [short] = [
            cell for cell in cells if long_id.startswith(cell.split('…')[0]) and long_id.endswith(cell.split('…')[1])
        ]
        # The shortened id, as printed, names the run.
        shown = run_cli(capsys, ['show', '--store', str(store), short, '--json'])
        assert shown.status == 0 and json.loads(shown.out)['run']['run_id'] == long_id
        wide = run_cli(capsys, ['runs', '--store', str(store), '--all', '--wide'])
        assert long_id in wide.out and max(len(line) for line in wide.out.splitlines()) > 100


def test_run_alone_searches_as_a_run_of_its_conversation(
    populated: Populated, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = populated.support_runs[3]
    alone = run_cli(capsys, ['search', '--store', populated.store, '--run', run_id, 'export', '--json'])
    assert alone.status == 0, alone.err
    document = json.loads(alone.out)
    assert (document['scope'], document['conversation_id'], document['run_id']) == ('conversation', SUPPORT, run_id)
    scoped = run_cli(
        capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, '--run', run_id, 'export']
    )
    assert run_cli(capsys, ['search', '--store', populated.store, '--run', run_id, 'export']).out == scoped.out


class TestShowConversation:
    def test_every_run_once_with_what_it_added(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['show', '--store', populated.store, '--conversation', OTHER])
        assert result.status == 0, result.err
        for run_id in populated.runs[OTHER]:
            assert f'── run {run_id}' in result.out
        # The first prompt is said once, though the second run inherited it.
        assert result.out.count('remember: the ZEBRA vault code is 7731') == 2  # the prompt and the echo

    def test_json_positions_are_each_runs_own(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['show', '--store', populated.store, '--conversation', SUPPORT, '--json'])
        document = json.loads(result.out)
        assert [run['run_id'] for run in document['runs']] == populated.support_runs
        first, second = document['runs'][:2]
        assert first['inherited'] == 0 and second['inherited'] > 0
        assert second['record'][0]['position'] == second['inherited']
        whole = json.loads(run_cli(capsys, ['show', '--store', populated.store, second['run_id'], '--json']).out)
        assert whole['record'][second['inherited'] :] == second['record']

    def test_a_run_id_and_a_conversation_exclude_each_other(
        self, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        result = run_cli(
            capsys, ['show', '--store', populated.store, populated.support_runs[0], '--conversation', SUPPORT]
        )
        assert result.status == 2
        assert run_cli(capsys, ['show', '--store', populated.store]).status == 2
        unknown = run_cli(capsys, ['show', '--store', populated.store, '--conversation', 'nope'])
        assert unknown.status == 1 and "no conversation 'nope'" in unknown.err


def test_search_help_states_minimums_and_the_install_text(capsys: pytest.CaptureFixture[str]) -> None:
    flat = ' '.join(run_cli(capsys, ['search', '--help']).out.split())
    assert 'at least 2048' in flat and 'at least 1' in flat
    assert "pip install -e '.[semantic]'" in flat
    assert 'pip install torch --index-url https://download.pytorch.org/whl/cpu' in flat


def test_singular_and_plural(populated: Populated, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    one = run_cli(capsys, ['search', '--store', populated.store, '--all', 'vault', '--max-matches', '1'])
    assert ' 1 persisted messages' not in one.out
    index = run_cli(capsys, ['index', '--store', populated.store, '--all'])
    assert '(s)' not in index.out
    check = run_cli(capsys, ['check', '--store', populated.store])
    assert '(s)' not in check.out and 'checked 10 runs' in check.out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_loading_note_shows_on_a_terminal_only() -> None:
    terminal = _Terminal()
    with loading_note(terminal, enabled=True):
        assert terminal.getvalue() == LOADING_NOTE
    assert terminal.getvalue().endswith('\r') and terminal.getvalue().count('\n') == 0
    piped = io.StringIO()
    with loading_note(piped, enabled=True):
        pass
    assert piped.getvalue() == ''
    quiet = _Terminal()
    with loading_note(quiet, enabled=False):  # BM25: nothing to load
        pass
    assert quiet.getvalue() == ''


def test_a_model_connection_failure_is_said_as_one() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, 'Connection refused')
        except ConnectionRefusedError as error:
            raise RuntimeError('Connection error.') from error
    except RuntimeError as wrapped:
        line = model_failure('openai:gpt-5', 2, wrapped)
    assert line.startswith("cannot reach the provider of model 'openai:gpt-5' in turn 2")
    assert 'Connection refused' in line
    assert (
        model_failure('openai:gpt-5', 1, ValueError('bad key'))
        == "model 'openai:gpt-5' failed in turn 1: ValueError: bad key"
    )


def _unreachable(messages: list[Any], info: Any) -> Any:
    raise ConnectionRefusedError(111, 'Connection refused')


def test_demo_with_an_unreachable_model_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic_ai.models.function import FunctionModel

    from durable_recall.cli import _demo

    monkeypatch.setattr(_demo, 'infer_model', lambda name: FunctionModel(_unreachable))
    result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(tmp_path / 'd.db'), '--model', 'openai:gpt-5'])
    assert result.status == 1
    assert result.err.startswith("durable-recall: error: cannot reach the provider of model 'openai:gpt-5' in turn 1")
    assert 'unexpected' not in result.err and 'Traceback' not in result.err and result.err.count('\n') == 1


def test_demo_names_the_missing_model_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from durable_recall.cli import _demo

    def missing(name: str) -> Any:
        raise ImportError('Please install the `openai` package to use the OpenAI provider', name='openai')

    monkeypatch.setattr(_demo, 'infer_model', missing)
    result = run_cli(capsys, ['demo', '--engine', 'none', '--store', str(tmp_path / 'd.db'), '--model', 'openai:gpt-5'])
    assert result.status == 1
    assert "needs the openai package, which is not installed: pip install 'pydantic-ai-slim[openai]'" in result.err
