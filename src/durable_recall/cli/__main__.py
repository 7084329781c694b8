"""`python -m durable_recall.cli`: the same as the `durable-recall` console script."""

from __future__ import annotations

from . import exit_with, main

exit_with(main())
