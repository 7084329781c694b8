"""Postgres configuration errors at construction, the password never shown, and `redact_url`."""

from __future__ import annotations

import pytest

from durable_recall.base import _errors
from durable_recall.stores import PostgresStepStore, redact_url


@pytest.mark.parametrize(
    'url',
    [
        'postgresql://[::1/test',
        'postgresql://host:99999/test',
        'postgresql://host:port/test',
        'postgres://host/test?no_such_option=1',
        'mysql://host/test',
        'host=localhost dbname=test',
    ],
)
def test_a_malformed_url_fails_at_construction(url: str) -> None:
    with pytest.raises(_errors.StoreConfigurationError, match='not a usable Postgres URL'):
        PostgresStepStore(url)


def test_the_url_error_does_not_show_the_password() -> None:
    with pytest.raises(_errors.StoreConfigurationError) as caught:
        PostgresStepStore('postgresql://user:hunter2@host:99999/test')

    assert 'hunter2' not in caught.value.message
    assert 'user:***@host' in caught.value.message


def test_exactly_one_of_url_and_pool() -> None:
    with pytest.raises(_errors.StoreConfigurationError, match='either a `url` or a caller-owned `pool`'):
        PostgresStepStore()


def test_an_empty_schema_name_is_refused() -> None:
    with pytest.raises(_errors.StoreConfigurationError, match='schema'):
        PostgresStepStore('postgresql://host/test', schema='')


@pytest.mark.parametrize(
    ('url', 'redacted'),
    [
        ('postgresql://u:secret@h:5432/db', 'postgresql://u:***@h:5432/db'),
        ('postgresql://u@h/db', 'postgresql://u@h/db'),
        ('postgresql://h/db?password=secret&sslmode=require', 'postgresql://h/db?password=***&sslmode=require'),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted
