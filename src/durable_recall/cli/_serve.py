"""`durable-recall mcp` and `durable-recall ui`: open the store, check scope and bind, and serve until stopped.

Both need the `serve` extra (the MCP SDK, Starlette, Jinja2, uvicorn); without it the command stops
with one line naming the extra, before the store is opened. The store is opened as the inspection
commands open it (never created, see `_store`), and must be a step store: a conversation store's
history is read by `conversations`, `show` and `search`.

Before anything listens, the scope is checked (every `--conversation` must exist, so that a typo is
an error at start, not a server that answers "nothing") and so is the bind address (a non-loopback
address needs a token, see `_serve_net`).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
from typing import Any

from ._errors import EXIT_USAGE, CliError
from ._serve_net import TOKEN_ENV, BearerTokenMiddleware, check_bind, read_token
from ._serve_scope import ServeScope
from ._store import OpenedStore, open_for_reading

__all__ = ('run_serve',)

_NEEDED = ('mcp', 'starlette', 'jinja2', 'uvicorn')


def run_serve(args: argparse.Namespace) -> int:
    """Run `mcp` or `ui` until interrupted; returns the exit status.

    Raises:
        CliError: The extra is missing, the store cannot be opened, a conversation is unknown, or the
            bind address needs a token that is not configured.
    """
    missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        raise CliError(
            f'`durable-recall {args.command}` needs the serve extra ({", ".join(missing)} not installed): '
            "pip install 'durable-recall[serve]'"
        )
    token = read_token(args.token_file)
    http = args.command == 'ui' or args.transport == 'http'
    if http:
        check_bind(args.host, token)
    elif args.token_file is not None:
        raise CliError('--token-file applies to HTTP only (--transport http)', status=EXIT_USAGE)
    scope = ServeScope.from_flags(args.conversation, args.all)
    try:
        return asyncio.run(_serve(args, scope, token, http))
    except CliError:
        raise
    except Exception as error:
        from ..base import DurableRecallError

        if isinstance(error, DurableRecallError):
            raise CliError(str(error)) from error
        raise


async def _serve(args: argparse.Namespace, scope: ServeScope, token: str | None, http: bool) -> int:
    async with open_for_reading(args.store, schema=args.schema, connect_timeout=args.connect_timeout) as opened:
        if not isinstance(opened, OpenedStore):
            raise CliError(
                f'{opened.label} is a conversation store (drc_* tables): `{args.command}` serves step stores; '
                'read a conversation store with `conversations`, `show` and `search`'
            )
        for conversation_id in sorted(scope.conversations or ()):
            if not await opened.store.list_runs(conversation_id=conversation_id):
                raise CliError(
                    f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
                )
        if args.command == 'mcp':
            from ._mcp import build_mcp_server

            server = build_mcp_server(opened.store, scope)
            if not http:
                await server.run_stdio_async()
                return 0
            app: Any = server.streamable_http_app(host=args.host, stateless_http=True, json_response=True)
            path = '/mcp'
        else:
            from ._ui import build_ui_app

            app = build_ui_app(opened.store, scope, opened.label)
            path = '/'
        if token is not None:
            app = BearerTokenMiddleware(app, token, browser=args.command == 'ui')
        await _listen(app, args.host, args.port, path, token is not None)
        return 0


async def _listen(app: Any, host: str, port: int, path: str, guarded: bool) -> None:
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level='warning', access_log=False, lifespan='on')
    server = uvicorn.Server(config)
    shown = f'[{host}]' if ':' in host else host
    guard = f'bearer token required ({TOKEN_ENV} or --token-file)' if guarded else 'no token (loopback only)'
    sys.stderr.write(f'durable-recall: serving http://{shown}:{port}{path} read-only; {guard}; Ctrl-C stops\n')
    sys.stderr.flush()
    await server.serve()
