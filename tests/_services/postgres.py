"""PostgreSQL for tests: the server at 127.0.0.1:5432, with a fresh schema or database per test.

Set `DURABLE_RECALL_TEST_POSTGRES_URL` to use another server. Tests that use these fixtures are
marked `postgres`, so `-m 'not postgres'` deselects them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from durable_recall.stores import redact_url

from ._skip import missing_service

URL_VARIABLE = 'DURABLE_RECALL_TEST_POSTGRES_URL'
DEFAULT_URL = 'postgresql://postgres@127.0.0.1:5432/test'
_FIXTURES = frozenset({'postgres_server', 'postgres_url', 'postgres_schema', 'postgres_database_url'})


def base_url() -> str:
    """The URL of the test server's database."""
    return os.environ.get(URL_VARIABLE) or DEFAULT_URL


def _probe(url: str) -> str | None:
    """`None` if the server answers a query quickly, else why not."""
    try:
        import psycopg
    except ImportError:
        return 'psycopg is not installed: pip install "durable-recall[postgres]"'
    try:
        with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
            conn.execute('SELECT 1')
    except psycopg.Error as error:
        reason = ' '.join(str(error).split())
        return f'Postgres at {redact_url(url)} does not accept connections ({reason}); start it or set {URL_VARIABLE}'
    return None


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(base_url(), connect_timeout=3, autocommit=True) as conn:
        conn.execute(sql.encode())


@pytest.fixture(scope='session')
def postgres_server() -> str:
    """The test server's URL, checked once per session; skips (fails under CI) if it is down."""
    url = base_url()
    problem = _probe(url)
    if problem is not None:
        missing_service(problem)
    return url


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """The URL of the test database (shared by every test: isolate with `postgres_schema`)."""
    return postgres_server


@pytest.fixture
def postgres_schema(postgres_server: str) -> Iterator[str]:
    """A schema that exists for this test only, dropped with everything in it afterwards."""
    name = f'dr_test_{uuid.uuid4().hex[:12]}'
    _admin(f'CREATE SCHEMA "{name}"')
    try:
        yield name
    finally:
        _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
def postgres_database_url(postgres_server: str) -> Iterator[str]:
    """The URL of a database that exists for this test only, dropped (with its sessions) afterwards."""
    name = f'dr_test_{uuid.uuid4().hex[:12]}'
    _admin(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(postgres_server)._replace(path=f'/{name}'))
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a Postgres fixture, so `-m 'not postgres'` can deselect it."""
    for item in items:
        if _FIXTURES.intersection(getattr(item, 'fixturenames', ())):
            item.add_marker(pytest.mark.postgres)
