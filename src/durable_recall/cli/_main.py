"""The `durable-recall` command line: the parser, the dispatch, and the one-line error contract.

`main` never lets a traceback reach the terminal for anything a user can cause: argparse's
complaints, `CliError`, the library's own errors and a missing extra all end as one
`durable-recall: error: ...` line on stderr and a non-zero status (2 for a bad command line, 1
otherwise). Set `DURABLE_RECALL_DEBUG=1` to get the traceback of an unexpected error instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn, TextIO

from pydantic_ai.exceptions import UserError

from ..base import DurableRecallError
from ..search import ORDERS
from ..text import ROLES, SEARCH_TOOL_NAME
from ._demo import add_demo_parser, run_demo
from ._errors import EXIT_ERROR, EXIT_USAGE, CliError, one_line
from ._index import index_store
from ._inspect import list_conversations, list_runs, show_run
from ._search import search_store
from ._store import open_for_reading

__all__ = ('build_parser', 'main')

PROG = 'durable-recall'


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line raises `CliError` (one line) instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f'{message} (see `{self.prog} --help`)', status=EXIT_USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: `sys.argv[1:]`); return the exit status."""
    err = sys.stderr
    try:
        args = build_parser().parse_args(argv)
        return asyncio.run(_dispatch(args, sys.stdout, err))
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else (0 if done.code is None else EXIT_ERROR)
    except CliError as error:
        return _fail(err, error.message, error.status)
    except (DurableRecallError, UserError) as error:
        return _fail(err, str(error), EXIT_ERROR)
    except KeyboardInterrupt:
        err.write(f'{PROG}: interrupted\n')
        return 130
    except BrokenPipeError:
        # The reader (`| head`) went away: stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as error:
        if os.environ.get('DURABLE_RECALL_DEBUG') == '1':
            raise
        message = f'unexpected {type(error).__name__}: {error} (set DURABLE_RECALL_DEBUG=1 for the traceback)'
        return _fail(err, message, EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, subcommands included."""
    parser = _Parser(
        prog=PROG,
        description=(
            'Exact, BM25-ranked recall over everything a Pydantic AI agent persisted. Run the demo, '
            'or inspect and search a store that StepPersistence wrote.'
        ),
    )
    parser.add_argument('--version', action='version', version=f'%(prog)s {_version()}')
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND', parser_class=_Parser)
    add_demo_parser(commands)
    store = _store_options()
    commands.add_parser(
        'conversations',
        parents=[store],
        help='list conversations with run counts and times',
        description='List the conversations in a store, oldest first, with how many runs each has and when they ran.',
    )
    runs = commands.add_parser(
        'runs',
        parents=[store],
        help='list runs with snapshot and message counts',
        description=(
            "List runs with their snapshots (complete ones) and the number of messages in each run's rebuilt "
            'record: what search reads. Reading every run of a large store takes a while: a progress bar on '
            'stderr counts the runs.'
        ),
    )
    _scope(runs, what='list')
    show = commands.add_parser(
        'show',
        parents=[store],
        help="show a run's rebuilt record, with positions",
        description=(
            'Show one run: who ran it and when, its snapshots, and its rebuilt record, each message at the position '
            'search results use. --json gives every message in full.'
        ),
    )
    show.add_argument('run_id', metavar='RUN_ID', help='the run to show (`runs` lists them)')
    _search_parser(commands, store)
    index = commands.add_parser(
        'index',
        parents=[store],
        help='bring the search index up to date now',
        description=(
            'Index every run that saved snapshots since the index last read it, so that the next search does not '
            'have to (searches catch up by themselves; this moves the cost, after an import or a batch of runs).'
        ),
    )
    _scope(index, what='index')
    return parser


def _store_options() -> _Parser:
    options = _Parser(add_help=False)
    group = options.add_argument_group('store')
    group.add_argument(
        '--store',
        required=True,
        metavar='PATH_OR_URL',
        help='a SQLite file (path or sqlite:///path.db) or a postgresql:// URL; never created by these commands',
    )
    group.add_argument('--schema', help='the Postgres schema holding the tables (default: the search path)')
    group.add_argument(
        '--connect-timeout',
        type=_number(float, minimum=0.5),
        default=3.0,
        metavar='SECONDS',
        help='how long to wait for a Postgres server (default: 3)',
    )
    output = options.add_argument_group('output')
    output.add_argument('--json', action='store_true', help='print JSON with stable field names, for scripts')
    output.add_argument('--progress', action='store_true', help='always draw the progress bar on stderr')
    return options


def _scope(parser: argparse.ArgumentParser, *, what: str) -> None:
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument('--conversation', metavar='ID', help=f'{what} this conversation only')
    scope.add_argument('--all', action='store_true', help=f'{what} every conversation in the store')


def _search_parser(commands: Any, store: _Parser) -> None:
    search = commands.add_parser(
        'search',
        parents=[store],
        help='search with the tool: same BM25 ranking, scope rules and answer',
        description=(
            f'Search the store exactly as the {SEARCH_TOOL_NAME} tool does. --conversation ID searches '
            "like a run of that conversation (scope='conversation'); --all searches the whole store."
        ),
    )
    search.add_argument('query', nargs='+', metavar='QUERY', help='words to look for')
    _scope(search, what='search')
    search.add_argument('--run', metavar='RUN_ID', help="search one run only (the tool's run_id)")
    search.add_argument('--max-matches', type=_number(int, minimum=1), default=10, metavar='N', help='default: 10')
    search.add_argument('--context-lines', type=_number(int, minimum=0), default=5, metavar='N', help='default: 5')
    search.add_argument(
        '--max-bytes',
        type=_number(int, minimum=2048),
        default=16_000,
        metavar='N',
        help='answer budget (default: 16000)',
    )
    search.add_argument('--role', action='append', choices=ROLES, help='only these roles (repeatable)')
    search.add_argument('--since', metavar='TIME', help='only messages at or after this ISO-8601 time')
    search.add_argument('--until', metavar='TIME', help='only messages at or before this ISO-8601 time')
    search.add_argument('--order', choices=ORDERS, default='relevance')


async def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.command == 'demo':
        return await run_demo(args, out)
    async with open_for_reading(args.store, schema=args.schema, connect_timeout=args.connect_timeout) as opened:
        if args.command == 'conversations':
            return await list_conversations(opened, args, out)
        if args.command == 'runs':
            return await list_runs(opened, args, out, err)
        if args.command == 'show':
            return await show_run(opened, args, out)
        if args.command == 'index':
            return await index_store(opened, args, out)
        return await search_store(opened, args, out, err)


def _number(kind: type[int] | type[float], *, minimum: float) -> Callable[[str], float]:
    """An argparse `type` that reads an int or a float of at least `minimum`."""
    noun = 'an integer' if kind is int else 'a number'

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'expected {noun}, got {text!r}') from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f'must be at least {minimum:g}, got {text!r}')
        return value

    return parse


def _fail(err: TextIO, message: str, status: int) -> int:
    err.write(f'{PROG}: error: {one_line(message)}\n')
    err.flush()
    return status


def _version() -> str:
    try:
        return version('durable-recall')
    except PackageNotFoundError:  # running from a source tree that was never installed
        return 'unknown'
