"""The CLI's one error type, and how any error becomes one line on stderr.

Every failure a user can cause (a missing store, an unknown run, a bad flag, a server that does
not answer) reaches the terminal as `durable-recall: error: <one line>` and a non-zero exit
status, never as a traceback: the line says what is wrong and, where there is one, the fix.
"""

from __future__ import annotations

__all__ = ('EXIT_ERROR', 'EXIT_USAGE', 'CliError', 'install_hint', 'one_line')

EXIT_ERROR = 1
"""Exit status for a failure: a store, a run or a server the command could not use."""

EXIT_USAGE = 2
"""Exit status for a command line that does not parse (argparse's convention)."""


class CliError(Exception):
    """A failure to report as one line, with the exit status to end with."""

    def __init__(self, message: str, *, status: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def one_line(text: str) -> str:
    """`text` with its line breaks and runs of whitespace folded into single spaces."""
    return ' '.join(text.split())


def install_hint(extra: str) -> str:
    """How to install one of durable-recall's extras: from a checkout, or where a package index has it."""
    return (
        f"pip install -e '.[{extra}]' in a checkout of durable-recall "
        f"(pip install 'durable-recall[{extra}]' from a package index)"
    )
