"""`python -m durable_recall`: the same as the `durable-recall` console script.

Ctrl-C while the command line's own modules load (before `main` can catch it) still ends with
the one line and status 130 that `main` gives, not Python's exit by signal.
"""

from __future__ import annotations

import sys

try:
    from .cli import exit_with, main

    status = main()
except KeyboardInterrupt:
    sys.stderr.write('durable-recall: interrupted\n')
    raise SystemExit(130) from None
exit_with(status)
