"""The `durable-recall` command: the demo, and commands to inspect and search a store.

`main(argv)` runs one command line and returns its exit status; the console script and
`python -m durable_recall` call it. See `durable-recall --help`.
"""

from __future__ import annotations

from ._main import main

__all__ = ('main',)
