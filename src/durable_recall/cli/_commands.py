"""Run a parsed command line: where the command line meets the library.

`_main` imports this module only after the command line has parsed, and each command imports its
own module only when it runs, so `conversations` does not load the demo's agent and engines, and
a store that is not there is reported before any layer loads.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TextIO, TypeVar

from ._errors import EXIT_USAGE, CliError
from ._parser import STORE_VARIABLE
from ._store import OpenedConversations, open_for_reading
from ._text import SafeText

__all__ = ('check_command_line', 'run_command')


def run_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the command `args` names; return its exit status.

    Raises:
        CliError: The command failed in a way its user can act on, a library error included.
    """
    interrupted: list[bool] = []
    out = SafeText.wrap(out)  # stored text reaches the terminal with its control characters escaped
    try:
        return asyncio.run(_noting_interrupts(lambda: _dispatch(args, out, err), interrupted))
    except CliError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    except Exception as error:
        if interrupted:
            # Ctrl-C cancelled the command, and what was cut short failed on its way out (a server
            # the interrupt also reached, a half-open connection): the user asked for the stop.
            raise KeyboardInterrupt from error
        # The library's errors (and pydantic-ai's `UserError`, which some of them also are) are
        # messages for the user. Their classes are looked at only here, on the way out; and no
        # `UserError` exists unless pydantic-ai's exceptions were loaded, so a command that never
        # loaded pydantic-ai does not load it to find that out.
        from ..base import DurableRecallError

        if isinstance(error, DurableRecallError):
            raise CliError(str(error)) from error
        if 'pydantic_ai.exceptions' in sys.modules:
            from pydantic_ai.exceptions import UserError

            if isinstance(error, UserError):
                raise CliError(str(error)) from error
        raise


_T = TypeVar('_T')


async def _noting_interrupts(command: Callable[[], Awaitable[_T]], interrupted: list[bool]) -> _T:
    """Run `command`, appending to `interrupted` when SIGINT arrives, and pass the signal on.

    `asyncio.run` answers Ctrl-C by cancelling the command and raising `KeyboardInterrupt`, unless
    the command's cleanup raises something else first; the note lets `run_command` report the
    interrupt (exit 130) whatever the cleanup raised. Installed from inside the loop, so that
    asyncio's own handler is the one it passes the signal to.
    """
    passed_on = signal.getsignal(signal.SIGINT)

    def note(signum: int, frame: FrameType | None) -> None:
        interrupted.append(True)
        if callable(passed_on):
            passed_on(signum, frame)

    try:
        signal.signal(signal.SIGINT, note)
    except ValueError:  # not the main thread (the CLI called from a thread): asyncio's handling only
        return await command()
    try:
        return await command()
    finally:
        signal.signal(signal.SIGINT, passed_on)


def check_command_line(args: argparse.Namespace) -> None:
    """What argparse cannot say about a command line: refused before any store is opened (exit 2)."""
    if args.command == 'demo':
        return
    if args.store is None:
        raise CliError(f'no store: pass --store PATH_OR_URL, or set {STORE_VARIABLE}', status=EXIT_USAGE)
    if args.command in ('index', 'search') and args.ranking == 'bm25' and args.embedder is not None:
        raise CliError(
            '--embedder is for hybrid ranking: drop --ranking bm25 (--embedder implies --ranking hybrid)',
            status=EXIT_USAGE,
        )
    if args.command != 'search':
        return
    if not ' '.join(args.query).strip():
        raise CliError('the query is empty: pass the words to look for', status=EXIT_USAGE)
    if args.conversation is None and not args.all and args.run is None:
        raise CliError(
            'say what to search: --conversation ID, --all, or --run RUN_ID (see `durable-recall search --help`)',
            status=EXIT_USAGE,
        )


async def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.command == 'demo':
        from ._demo import run_demo

        return await run_demo(args, out)
    check_command_line(args)
    async with open_for_reading(
        args.store, schema=args.schema, connect_timeout=args.connect_timeout, kind=args.kind
    ) as opened:
        if args.command in ('delete', 'prune'):
            from ._erase import run_erasure

            return await run_erasure(opened, args, out, err)
        if isinstance(opened, OpenedConversations):
            from ._conversation_store import run_on_conversation_store

            return await run_on_conversation_store(opened, args, out, err)
        if args.command == 'conversations':
            from ._inspect import list_conversations

            return await list_conversations(opened, args, out)
        if args.command == 'runs':
            from ._inspect import list_runs

            return await list_runs(opened, args, out, err)
        if args.command == 'show':
            from ._inspect import show_run

            return await show_run(opened, args, out)
        if args.command == 'check':
            from ._check import check_store

            return await check_store(opened, args, out, err)
        if args.command == 'index':
            from ._index import index_store

            return await index_store(opened, args, out, err)
        from ._search import search_store

        return await search_store(opened, args, out, err)
