"""The command line's administrative commands as argparse sees them: `delete`, `prune`, `mcp` and `ui`.

Split from `_parser` (which builds the whole command line and calls these); like it, this module
imports no layer of the library.
"""

from __future__ import annotations

from typing import Any

from ._arg_types import Parser, duration, non_empty, number

__all__ = ('erasure_parsers', 'serve_parsers')


def erasure_parsers(commands: Any, store: Parser) -> None:
    """`delete` and `prune` (see `_erase`)."""
    confirm = Parser(add_help=False)
    confirm.add_argument('--yes', action='store_true', help='do not ask for confirmation (required without a terminal)')
    delete = commands.add_parser(
        'delete',
        parents=[store, confirm],
        help='erase a conversation or a run: its rows, index entries and vectors, and their bytes in the files',
        description=(
            'Delete one conversation (every run, snapshot, message, search index entry and vector it has) or one run '
            '(runs that inherited its messages keep copies; its conversation is re-indexed without it), then scrub '
            'the database so that no byte of it stays in the files (SQLite: the write-ahead log is emptied; Postgres: '
            'VACUUM FULL of the touched tables, which locks each while it is rewritten). Prints what it will remove '
            'and asks first; --yes skips the question.'
        ),
    )
    target = delete.add_mutually_exclusive_group(required=True)
    target.add_argument('--conversation', metavar='ID', help='delete this conversation')
    target.add_argument('--run', metavar='ID', help='delete this run (a step store only)')
    prune = commands.add_parser(
        'prune',
        parents=[store, confirm],
        help='erase every conversation idle for longer than a given age',
        description=(
            'Delete every conversation with no run started and no snapshot saved (a conversation store: no save) '
            'for --idle-for, then scrub the database as `delete` does. Safe while writers run: a conversation '
            'saved to after the listing is kept. Running it again deletes nothing more.'
        ),
    )
    prune.add_argument(
        '--idle-for', required=True, type=duration, metavar='AGE', help='the idle age: 90d, 12h, 30m, 45s or 2w'
    )
    prune.add_argument('--dry-run', action='store_true', help='list what would be deleted; delete nothing')


def serve_parsers(commands: Any) -> None:
    """`mcp` and `ui`: the store served read-only to an MCP client or a browser (the `serve` extra)."""
    for name, help_text, description, port in (
        (
            'mcp',
            'serve read-only search, conversations and runs to MCP clients (stdio or streamable HTTP)',
            "An MCP server with read-only tools: search (the search tool's engine and answer), list conversations, "
            "show a run or a conversation. Needs the serve extra: pip install 'durable-recall[serve]'.",
            8765,
        ),
        (
            'ui',
            'a read-only web inspector of the store: timelines, search, check',
            'A server-rendered web inspector: conversations, timelines, search with highlighted hits, the check '
            "report. GET only; it never changes the store. Needs the serve extra: pip install 'durable-recall[serve]'.",
            8766,
        ),
    ):
        parser = commands.add_parser(name, help=help_text, description=description)
        parser.add_argument('--store', required=True, type=non_empty, metavar='PATH_OR_URL', help='as for search')
        parser.add_argument('--schema', help='the Postgres schema holding the tables (default: the search path)')
        parser.add_argument('--connect-timeout', type=number(float, minimum=0.5), default=3.0, metavar='SECONDS')
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument(
            '--conversation', action='append', metavar='ID', help='serve this conversation only (repeatable)'
        )
        scope.add_argument('--all', action='store_true', help='serve every conversation in the store')
        if name == 'mcp':
            parser.add_argument('--transport', choices=('stdio', 'http'), default='stdio', help='default: stdio')
        parser.add_argument('--host', default='127.0.0.1', help='HTTP bind address (default: 127.0.0.1, loopback)')
        parser.add_argument('--port', type=number(int, minimum=0), default=port, help=f'HTTP port (default: {port})')
        parser.add_argument(
            '--token-file',
            metavar='PATH',
            help='a file holding the bearer token HTTP requests must carry (or set DURABLE_RECALL_TOKEN); '
            'required when binding anything but loopback',
        )
