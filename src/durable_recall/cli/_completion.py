"""Shell completion for bash and zsh, by argcomplete (the `completion` extra).

Two halves. The shell half is a script the shell sources once (`durable-recall completion bash`
prints it): on Tab it runs `durable-recall` again with the line typed so far in its environment
(`_ARGCOMPLETE=1`, `COMP_LINE`, `COMP_POINT`). The command half is `complete`, which `main`
calls before parsing: in such a run it answers with the commands, options and choices that fit,
straight from the argparse parser (so completion never lags behind the command line), and ends
the process. Outside completion it returns at once, without importing argcomplete.

`durable-recall/cli/__init__.py` carries the `PYTHON_ARGCOMPLETE_OK` marker, which argcomplete's
global completion (`activate-global-python-argcomplete`) looks for in a console script's module.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from ._errors import EXIT_USAGE, CliError, install_hint

__all__ = ('SHELLS', 'complete', 'print_completion_script')

SHELLS = ('bash', 'zsh')
"""The shells `durable-recall completion` writes a script for."""


def complete(parser: argparse.ArgumentParser) -> None:
    """Answer a completion request (the shell's Tab) for `parser`, and end the process; otherwise return.

    Without argcomplete a completion request gets no answer (the shell falls back to file names)
    rather than a traceback in the middle of the user's line.
    """
    if '_ARGCOMPLETE' not in os.environ:
        return
    try:
        import argcomplete
    except ImportError:
        sys.exit(1)
    argcomplete.autocomplete(parser)


def print_completion_script(shell: str, out: TextIO) -> int:
    """Write the script that registers completion of `durable-recall` in `shell`.

    Raises:
        CliError: argcomplete is not installed (the `completion` extra), or `shell` is not one it serves.
    """
    if shell not in SHELLS:
        raise CliError(f'no completion for shell {shell!r}: choose {" or ".join(SHELLS)}', status=EXIT_USAGE)
    try:
        from argcomplete.shell_integration import shellcode
    except ImportError:
        raise CliError(
            f'shell completion needs argcomplete (the completion extra): {install_hint("completion")}'
        ) from None
    out.write(shellcode(['durable-recall'], shell=shell))
    return 0
