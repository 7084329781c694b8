"""One string that names a store, for configuration files, environment variables and the CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    from ._protocol import StepStore

__all__ = ('open_spec_store', 'open_store', 'redact_url')

_SQLITE_SUFFIXES = ('.db', '.sqlite', '.sqlite3')
_SUPPORTED = (
    'sqlite:///relative.db, sqlite:////absolute/path.db, a path ending in .db/.sqlite/.sqlite3, '
    'postgresql://..., postgres://..., memory:'
)


def open_spec_store(url: object, capability: str) -> StepStore:
    """The store an agent spec names for `capability` (its `from_spec`), by a URL `open_store` accepts.

    `memory:` is refused: each capability declared with it would open its own empty store, so search
    would never see what persistence wrote.

    Raises:
        TypeError: `url` is not a string.
        ValueError: `url` is `memory:`.
        StoreConfigurationError: As `open_store`.
    """
    if not isinstance(url, str):
        raise TypeError(f'{capability} in an agent spec needs `store`: a store URL ({_SUPPORTED}), got {url!r}')
    if url.strip() in ('memory:', 'memory://'):
        raise ValueError(
            f'{capability} in an agent spec cannot use the store {url!r}: each capability would open its own empty '
            'in-memory store. Use sqlite:///path.db or postgresql://...'
        )
    return open_store(url)


def open_store(url: str) -> StepStore:
    """Build the store a URL names.

    Accepted forms:

    - `sqlite:///relative.db` and `sqlite:////absolute/path.db` (three slashes, then the path),
    - a bare filesystem path ending in `.db`, `.sqlite` or `.sqlite3`,
    - `postgresql://...` or `postgres://...`, handed to
      [`PostgresStepStore`][durable_recall.stores.PostgresStepStore] as is,
    - `memory:` for an [`InMemoryStepStore`][durable_recall.stores.InMemoryStepStore].

    Raises:
        StoreConfigurationError: The scheme is not one of these, or the named store cannot be
            configured (an unwritable SQLite path, a malformed Postgres URL).
    """
    text = url.strip()
    if text in ('memory:', 'memory://'):
        from .memory import InMemoryStepStore

        return InMemoryStepStore()
    scheme, separator, rest = text.partition('://')
    if not separator:
        if text.lower().endswith(_SQLITE_SUFFIXES):
            return _sqlite(text)
        from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

        raise StoreConfigurationError(
            f'{url!r} is not a store URL: it has no scheme and is not a path ending in .db, .sqlite or .sqlite3. '
            f'Supported: {_SUPPORTED}.'
        )
    scheme = scheme.lower()
    if scheme == 'sqlite':
        if not rest.startswith('/') or rest == '/':
            from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

            raise StoreConfigurationError(
                f'{url!r} names no SQLite file: write sqlite:///relative.db or sqlite:////absolute/path.db.'
            )
        return _sqlite(rest[1:])
    if scheme in ('postgresql', 'postgres'):
        from .postgres import PostgresStepStore

        return PostgresStepStore(text)
    from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

    raise StoreConfigurationError(f'store URL scheme {scheme!r} is not supported. Supported: {_SUPPORTED}.')


def _sqlite(path: str) -> StepStore:
    from .sqlite import SqliteStepStore

    return SqliteStepStore(path)


def redact_url(url: str) -> str:
    """The URL with any password replaced by `***`, fit for error messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return '<malformed URL>'
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, hosts = netloc.rpartition('@')
        netloc = f'{userinfo.partition(":")[0]}:***@{hosts}'
    query = parts.query
    if 'password' in query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(key, '***' if key == 'password' else value) for key, value in pairs], safe='*')
    return urlunsplit(parts._replace(netloc=netloc, query=query))
