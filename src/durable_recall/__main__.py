"""`python -m durable_recall`: the same as the `durable-recall` console script."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
