"""One string that names a store, for configuration files, environment variables and the CLI."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import unquote_plus

if TYPE_CHECKING:
    from ._protocol import StepStore

__all__ = ('hide_secrets_of', 'open_spec_store', 'open_store', 'redact_url')

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
    """The URL (or libpq `key=value` string) with every password replaced by `***`, fit for messages and logs.

    Built to fail safe on text no parser agrees on: a password holding `/`, `#`, `?` or `@` unencoded
    (which `urllib` and libpq split elsewhere), percent-encoded parameter names (`pass%77ord=`), and
    the `password` and `sslpassword` parameters in any case, in a URL's query or a `key=value`
    string. The user information runs to the *last* `@` after the scheme, and all of it after the
    user name is hidden; an `@` later in the URL (in a query value) hides more than the password,
    never less. A text that is not one URL (an error message) has each URL in it redacted so, up
    to the next space or quote.
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return '<not a URL>'
    scheme, separator, rest = url.partition('://')
    if not separator or not _SCHEME.fullmatch(scheme):
        # Not one URL: a `key=value` string, or a message quoting URLs (each redacted in place).
        text = _EMBEDDED_URL.sub(lambda match: redact_url(match.group()), url)
        return _KEY_VALUE_SECRET.sub(lambda match: f'{match.group(1)}***', text)
    userinfo, at, after = rest.rpartition('@')
    if at:
        user, colon, _ = userinfo.partition(':')
        shown_user = _redact_query(user) if ('?' in user or '=' in user) else user
        rest = f'{shown_user}:***@{after}' if colon else f'{shown_user}@{after}'
    return f'{scheme}://{_redact_query(rest)}'


def hide_secrets_of(url: str, text: str) -> str:
    """`text` (a driver's message about `url`) with every piece of `url`'s passwords in it replaced by `***`.

    A parser's message quotes what it could not read, and with a password holding `/` or `#` that
    is a piece of the password ("Port could not be cast to integer value as '<password>'"): each
    piece of 3 characters or more, split where parsers split, raw and percent-decoded, is hidden.
    """
    secrets: list[str] = []
    _, separator, rest = url.partition('://')
    if separator:
        userinfo, at, _ = rest.rpartition('@')
        if at and ':' in userinfo:
            secrets.append(userinfo.partition(':')[2])
        for pair in rest.partition('?')[2].split('&'):
            key, equals, value = pair.partition('=')
            if equals and unquote_plus(key).strip().lower() in _SECRET_KEYS:
                secrets.append(value)
    else:
        secrets += (match.group(0).partition('=')[2].strip(" '") for match in _KEY_VALUE_SECRET.finditer(url))
    pieces = {piece for secret in secrets for form in (secret, unquote_plus(secret)) for piece in _PIECES.split(form)}
    pieces.update(unquote_plus(secret) for secret in secrets)
    pieces.update(secrets)
    for piece in sorted((piece for piece in pieces if len(piece) >= 3), key=len, reverse=True):
        text = text.replace(piece, '***')
    return text


def _redact_query(text: str) -> str:
    """`text` with the value of each `password`-like parameter after its first `?` hidden (to the next `&`)."""
    head, question, query = text.partition('?')
    if not question:
        return text
    pairs: list[str] = []
    for pair in query.split('&'):
        key, equals, _ = pair.partition('=')
        if equals and unquote_plus(key).strip().lower() in _SECRET_KEYS:
            pair = f'{key}=***'
        pairs.append(pair)
    return f'{head}?{"&".join(pairs)}'


_SCHEME = re.compile(r'[A-Za-z][A-Za-z0-9+.\-]*')
_EMBEDDED_URL = re.compile(r"""[A-Za-z][A-Za-z0-9+.\-]*://[^\s'"]*""")
_PIECES = re.compile(r"[/#?@:&=;'\"\s]+")
_SECRET_KEYS = frozenset({'password', 'sslpassword'})
_KEY_VALUE_SECRET = re.compile(r"""(?i)(\b(?:ssl)?password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|\S*)""")
"""A libpq `key=value` password: quoted (with backslash escapes) or up to the next space."""
