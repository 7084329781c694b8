"""`python -m durable_recall.cli`: the same as the `durable-recall` console script."""

from __future__ import annotations

from . import main

raise SystemExit(main())
