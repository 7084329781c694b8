"""Shared test configuration.

Service fixtures live in `tests/_services/`: each starts (or connects to) a real service and
skips its tests with the reason when the service is missing, except under `CI=true`, where a
missing service fails the run.

The suite also runs on the oldest supported pydantic-ai (pydantic-ai-slim 2.62, in CI's second venv),
which lacks the conversation store API: the tests built on it are left out or skipped there with the
reason (`NEEDS_CONVERSATION_STORE`, the `conversation_store` marker), and the header says which.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import version
from pathlib import Path

import pytest

pytest_plugins = [
    'tests._services.postgres',
    'tests._services.temporal',
    'tests._services.dbos',
    'tests._services.stores',
]

HAS_CONVERSATION_STORE = importlib.util.find_spec('pydantic_ai.conversation_store') is not None
"""Whether pydantic-ai has its conversation store API (pydantic-ai-slim>=2.68); CI also runs on 2.62, which has not."""

NEEDS_CONVERSATION_STORE = (
    'conversations',
    'cli/test_conversation_store.py',
    'durable/test_conversation_dbos.py',
    'durable/test_conversation_temporal.py',
)
"""Test paths (under tests/) built on the conversation store API at import time: not collected without it."""

_TESTS = Path(__file__).parent
_PYDANTIC_AI = version('pydantic-ai-slim')
_WHY_NOT_COLLECTED = (
    f"need pydantic-ai's conversation store API (pydantic-ai-slim>=2.68); pydantic-ai-slim {_PYDANTIC_AI} is installed"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        'markers', "conversation_store: needs pydantic-ai's conversation store API (pydantic-ai-slim>=2.68)"
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # A module that imports the API at its top cannot even be collected on an older pydantic-ai (nor
    # can tests/conversations/conftest.py), so these paths are left out whole and named in the header.
    if HAS_CONVERSATION_STORE or not collection_path.is_relative_to(_TESTS):
        return None
    relative = collection_path.relative_to(_TESTS).as_posix()
    return True if relative in NEEDS_CONVERSATION_STORE else None


def pytest_report_header(config: pytest.Config) -> str | None:
    if HAS_CONVERSATION_STORE:
        return None
    paths = ', '.join(f'tests/{path}' for path in NEEDS_CONVERSATION_STORE)
    return f'not collected ({_WHY_NOT_COLLECTED}): {paths}'


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if HAS_CONVERSATION_STORE:
        return
    skip = pytest.mark.skip(reason=_WHY_NOT_COLLECTED.replace('need ', 'needs ', 1))
    for item in items:
        if item.get_closest_marker('conversation_store'):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not HAS_CONVERSATION_STORE:
        header = pytest_report_header(terminalreporter.config)
        terminalreporter.write_line(header or '', yellow=True)
