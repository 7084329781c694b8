"""One rule for a missing service: skip locally with the reason, fail under `CI=true`."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """Whether this run is CI, where every service must be present."""
    return os.environ.get('CI', '').lower() in {'1', 'true', 'yes'}


def missing_service(reason: str) -> None:
    """Skip the requesting test, or fail it under CI."""
    if in_ci():
        pytest.fail(f'{reason} (CI=true: a missing service is a failure, not a skip)', pytrace=False)
    pytest.skip(reason)
