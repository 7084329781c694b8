"""The command line's parser stands alone: `--help` and usage errors load no layer and no pydantic-ai.

The parser copies the few library values its help shows (it cannot import them without loading
the layers); these tests keep each copy equal to the library's own. Whether that makes the command
quick is for the benchmarks to say: here only what gets imported is checked, in fresh processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from durable_recall.cli import _parser, _script
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


def test_a_command_that_opens_a_store_loads_the_library(populated: Populated) -> None:
    # The control: the probe does see what a command that reads a store imports.
    modules = loaded_modules(['conversations', '--store', populated.store])
    assert {'pydantic_ai', 'durable_recall.base', 'durable_recall.stores'} <= modules


class TestValuesTheParserShares:
    def test_the_search_flags_offer_what_the_tool_does(self) -> None:
        search = _parser.build_parser()._subparsers._group_actions[0].choices['search']  # type: ignore[union-attr]
        choices = {action.dest: action.choices for action in search._actions}
        assert tuple(choices['role']) == ROLES
        assert tuple(choices['order']) == ORDERS
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
