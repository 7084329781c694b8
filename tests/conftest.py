"""Shared test configuration.

Service fixtures live in `tests/_services/`: each starts (or connects to) a real service and
skips its tests with the reason when the service is missing, except under `CI=true`, where a
missing service fails the run.
"""

from __future__ import annotations

pytest_plugins = [
    'tests._services.postgres',
    'tests._services.temporal',
    'tests._services.dbos',
    'tests._services.stores',
]
