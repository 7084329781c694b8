"""A Postgres store's configuration, checked at construction: each bad value is named there, not at first use."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .._url import hide_secrets_of, redact_url

if TYPE_CHECKING:
    from ._live import AsyncConnectionPoolLike

__all__ = ('check_config', 'check_url')


def check_config(
    store: str,
    url: str | None,
    pool: AsyncConnectionPoolLike | None,
    schema: str | None,
    connect_timeout: float,
    max_size: int,
) -> None:
    """Refuse a configuration that could never connect, naming the bad value (checked at construction)."""
    if (url is None) == (pool is None):
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(f'{store}: pass either a `url` or a caller-owned `pool`, not both.')
    if url is not None:
        check_url(url, store)
    if schema is not None and not (
        isinstance(schema, str) and 0 < len(schema.encode()) <= 63 and '\x00' not in schema  # pyright: ignore[reportUnnecessaryIsInstance]
    ):
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(
            f'{store}: schema {schema!r} is not a usable Postgres identifier: '
            'pass a non-empty name of at most 63 bytes.'
        )
    if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, int | float) or not connect_timeout > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(
            f'{store}: connect_timeout must be a number of seconds > 0, got {connect_timeout!r}'
        )
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(f'{store}: max_size must be an int >= 1, got {max_size!r}')


def check_url(url: object, store: str) -> None:
    """Refuse a URL that is not a string, not `postgresql://` (or `postgres://`), or that libpq cannot parse."""
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    if not isinstance(url, str):
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(f'{store}: url must be a string, got {type(url).__name__}')
    problem = None
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises for a port that is not a number in range
        if parts.scheme not in ('postgresql', 'postgres'):
            problem = f'the scheme is {parts.scheme!r}, not postgresql:// or postgres://'
        else:
            conninfo_to_dict(url)
    except (ValueError, ProgrammingError) as error:
        problem = str(error).strip()
    if problem is not None:
        from ...base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(
            f'{store}: {redact_url(url)!r} is not a usable Postgres URL ({hide_secrets_of(url, problem)}): '
            'pass one like postgresql://user:password@host:5432/database.'
        )
