"""`main`: parse the command line, run the command, and keep the one-line error contract.

`main` never lets a traceback reach the terminal for anything a user can cause: argparse's
complaints, `CliError`, the library's own errors and a missing extra all end as one
`durable-recall: error: ...` line on stderr and a non-zero status (2 for a bad command line, 1
otherwise). Set `DURABLE_RECALL_DEBUG=1` to get the traceback of an unexpected error instead.

Only `_commands` loads the library (and pydantic-ai with it), and it is imported once the command
line has parsed: `--help`, `--version` and a mistyped command line stay quick.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from ._completion import complete, print_completion_script
from ._errors import EXIT_ERROR, CliError, install_hint, one_line
from ._parser import PROG, build_parser
from ._text import clean

__all__ = ('exit_with', 'main', 'run')


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: `sys.argv[1:]`); return the exit status."""
    err = sys.stderr
    try:
        parser = build_parser()
        complete(parser)  # a shell's Tab: answered from the parser, then the process ends
        args = parser.parse_args(argv)
        if args.command == 'completion':
            return print_completion_script(args.shell, sys.stdout)
        if args.command in ('mcp', 'ui'):
            from ._serve import run_serve

            return run_serve(args)
        from ._commands import run_command

        return run_command(args, sys.stdout, err)
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else (0 if done.code is None else EXIT_ERROR)
    except CliError as error:
        return _fail(err, error.message, error.status)
    except KeyboardInterrupt:
        err.write(f'{PROG}: interrupted\n')
        return 130
    except ImportError as error:
        return _fail(err, _missing_package(error), EXIT_ERROR)
    except BrokenPipeError:
        # The reader (`| head`) went away: stop quietly, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as error:
        if os.environ.get('DURABLE_RECALL_DEBUG') == '1':
            raise
        message = f'unexpected {type(error).__name__}: {error} (set DURABLE_RECALL_DEBUG=1 for the traceback)'
        return _fail(err, message, EXIT_ERROR)


def run() -> NoReturn:
    """The console script: run `sys.argv[1:]` and exit with its status (see `exit_with`)."""
    exit_with(main())


def exit_with(status: int) -> NoReturn:
    """End the process with a finished command's `status`.

    Once `main` has returned the command is over: a Ctrl-C landing in the interpreter's teardown
    has nothing left to stop, and would otherwise end a command that succeeded (its output
    written) as a kill by signal, with no line on stderr. So the interrupt is ignored from here on.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise SystemExit(status)


_EXTRAS = {
    'psycopg': 'postgres',
    'psycopg_pool': 'postgres',
    'temporalio': 'temporal',
    'dbos': 'dbos',
    **dict.fromkeys(('mcp', 'starlette', 'jinja2', 'uvicorn'), 'serve'),
}
"""Which extra installs a package the library imports only when a feature needs it."""


def _missing_package(error: ImportError) -> str:
    """One line naming the missing package and the extra that installs it."""
    cause = error.__cause__
    named = error.name or (cause.name if isinstance(cause, ImportError) else None)
    name = (named or '').partition('.')[0]
    extra = _EXTRAS.get(name)
    if extra is None:
        return f'a package is missing ({error}): reinstall durable-recall with the extras you use'
    return f'{name} is not installed: {install_hint(extra)}'


def _fail(err: TextIO, message: str, status: int) -> int:
    err.write(f'{PROG}: error: {clean(one_line(message), layout=False)}\n')
    err.flush()
    return status
