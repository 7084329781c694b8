"""The command line's parser stands alone: `--help` and usage errors load no layer and no pydantic-ai.

Nor does a command that only reads a store's rows (`conversations`, an `index` with nothing to
do): only the commands that decode messages load pydantic-ai.

The parser copies the few library values its help shows (it cannot import them without loading
the layers); these tests keep each copy equal to the library's own. Whether that makes the command
quick is for the benchmarks to say: here only what gets imported is checked, in fresh processes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import get_args, get_type_hints

import pytest

from durable_recall import ConversationSearch
from durable_recall.cli import _parser, _script, main
from durable_recall.search import ORDERS
from durable_recall.text import ROLES, SEARCH_TOOL_NAME

from ._support import Populated

_LAYERS = ('base', 'text', 'history', 'index', 'stores', 'search', 'persistence', 'compaction', 'temporal')

_PROBE = """
import json, runpy, sys
argv = json.loads(sys.argv[1])
if argv[:1] == ['-m']:
    sys.argv = ['durable-recall', *argv[1:]]
    try:
        runpy.run_module('durable_recall', run_name='__main__')
    except SystemExit:
        pass
else:
    from durable_recall.cli import main
    main(argv)
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
"""Runs a command line as the console script does (`-m`: as `python -m durable_recall`); lists what it loaded."""


def loaded_modules(argv: list[str]) -> set[str]:
    result = subprocess.run(
        [sys.executable, '-c', _PROBE, json.dumps(argv)], capture_output=True, text=True, timeout=60, check=False
    )
    *_, last = result.stderr.splitlines() or ['']
    assert last.startswith('['), result.stderr
    return set(json.loads(last))


@pytest.mark.parametrize(
    'argv',
    [
        ['--help'],
        ['-m', '--help'],
        ['--version'],
        ['search', '--help'],
        ['demo', '--help'],
        ['conversations', '--help'],
        [],
        ['frobnicate'],
        ['search', '--store', 'x.db', '--all', 'q', '--max-matches', 'many'],
        ['demo', '--engine', 'celery'],
        ['search', '--store', 'x.db', '--all', 'q', '--ranking', 'hybrid', '--hybrid-weight', '2'],
    ],
    ids=repr,
)
def test_help_version_and_usage_errors_load_no_library(argv: list[str]) -> None:
    modules = loaded_modules(argv)
    assert 'durable_recall.cli._parser' in modules, 'the probe ran the command line'
    assert not {m for m in modules if m.partition('.')[0] in ('pydantic_ai', 'pydantic', 'temporalio', 'dbos')}
    assert not {f'durable_recall.{layer}' for layer in _LAYERS} & modules


def test_a_missing_store_is_reported_before_the_library_loads(tmp_path: Path) -> None:
    modules = loaded_modules(['conversations', '--store', str(tmp_path / 'missing.db')])
    assert 'durable_recall.cli._store' in modules
    assert 'pydantic_ai' not in modules


@pytest.mark.parametrize(
    'argv',
    [
        ['conversations'],
        ['conversations', '--json'],
        ['index', '--all'],
        ['index', '--conversation', 'ticket-42'],
    ],
    ids=repr,
)
def test_commands_reading_rows_only_load_no_pydantic_ai(populated: Populated, argv: list[str], tmp_path: Path) -> None:
    # The CLI's start goal (issue 15): pydantic-ai takes most of a second to import, and a command
    # that lists rows or finds the index current decodes no message, so it must not load it.
    store = tmp_path / 'indexed.db'
    shutil.copyfile(populated.store, store)
    assert main(['index', '--store', str(store), '--all']) == 0  # after this, `index` has nothing to decode
    modules = loaded_modules([*argv, '--store', str(store)])
    assert {'durable_recall.base', 'durable_recall.stores', 'durable_recall.index'} <= modules, 'the store was read'
    assert not {m for m in modules if m.partition('.')[0] == 'pydantic_ai'}
    # Nor what a SQLite file does not need: the memory store, and package metadata (read only to
    # name the installed pydantic-ai in a version error). Each is ~10 ms of the start.
    assert not {'durable_recall.stores.memory', 'importlib.metadata'} & modules


@pytest.mark.parametrize(
    'argv',
    [
        ['runs', '--all'],
        ['show', 'LAST_SUPPORT_RUN'],
        ['check'],
        ['search', '--all', 'vault'],
    ],
    ids=repr,
)
def test_commands_that_decode_messages_load_pydantic_ai(populated: Populated, argv: list[str]) -> None:
    # The control: the probe does see pydantic-ai when a command decodes messages (it needs it then).
    argv = [populated.support_runs[-1] if part == 'LAST_SUPPORT_RUN' else part for part in argv]
    modules = loaded_modules([*argv, '--store', populated.store])
    assert 'pydantic_ai.messages' in modules


_USER_ERROR_PROBE = """
import sys
from durable_recall.stores import open_store  # the library first, without pydantic-ai
assert 'pydantic_ai' not in sys.modules, 'opening a store should not need pydantic-ai'
from pydantic_ai.exceptions import UserError
import durable_recall
try:
    open_store('ftp://nowhere')
except UserError as error:
    assert type(error) is durable_recall.errors.StoreConfigurationError, type(error)
    print('caught', type(error).__name__)
"""


def test_configuration_errors_are_user_errors_whichever_loads_first() -> None:
    # Loaded before pydantic-ai, the library still raises errors an `except UserError` catches.
    result = subprocess.run(
        [sys.executable, '-c', _USER_ERROR_PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == 'caught StoreConfigurationError\n'


class TestValuesTheParserShares:
    def test_the_search_flags_offer_what_the_tool_does(self) -> None:
        search = _parser.build_parser()._subparsers._group_actions[0].choices['search']  # type: ignore[union-attr]
        choices = {action.dest: action.choices for action in search._actions}
        assert tuple(choices['role']) == ROLES
        assert tuple(choices['order']) == ORDERS
        assert tuple(choices['ranking']) == get_args(get_type_hints(ConversationSearch)['ranking'])
        help_text = search.format_help()
        weight = {field.name: field.default for field in fields(ConversationSearch)}['hybrid_weight']
        assert f'(default: {weight:g})' in ' '.join(help_text.split())
        assert SEARCH_TOOL_NAME in search.description

    def test_engines_are_the_engine_names(self) -> None:
        assert get_args(_parser.EngineName) == _parser.ENGINES

    def test_the_turn_limits_fit_the_script(self) -> None:
        assert len(_script._MIDDLE) + 2 == _parser.MAX_TURNS
        assert len(_script.prompts(_parser.MAX_TURNS)) == _parser.MAX_TURNS
        assert len(_script.prompts(_parser.MIN_TURNS)) == _parser.MIN_TURNS
        for outside in (_parser.MIN_TURNS - 1, _parser.MAX_TURNS + 1):
            with pytest.raises(ValueError, match='turns must be between'):
                _script.prompts(outside)
