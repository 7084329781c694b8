# PYTHON_ARGCOMPLETE_OK
"""The `durable-recall` command: the demo, and commands to inspect and search a store.

`main(argv)` runs one command line and returns its exit status; the console script (`run`) and
`python -m durable_recall` call it, then leave through `exit_with`. See `durable-recall --help`.
"""

from __future__ import annotations

from ._main import exit_with, main, run

__all__ = ('exit_with', 'main', 'run')
