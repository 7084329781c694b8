"""Where `mcp` and `ui` listen over HTTP, and the bearer token that guards them.

The servers show stored conversations, which are private: on the loopback interface only the
machine's own users reach them, anywhere else anybody on the network could. So a bind address that
is not loopback is refused unless a token is configured, and with a token configured every request
must carry it (`Authorization: Bearer <token>`), loopback or not. The token comes from the
`DURABLE_RECALL_TOKEN` environment variable or a file (`--token-file`), never from a command-line
argument, which every user of the machine can read in `ps`. Tokens are compared in constant time.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from ._errors import EXIT_USAGE, CliError

__all__ = ('TOKEN_ENV', 'BearerTokenMiddleware', 'check_bind', 'is_loopback', 'read_token')

TOKEN_ENV = 'DURABLE_RECALL_TOKEN'
"""The environment variable a bearer token is read from."""

_BASIC = b'Basic realm="durable-recall", charset="UTF-8"'
"""The challenge that makes a browser ask for credentials (the token as the password, any user name)."""

_MIN_TOKEN_LENGTH = 16
"""Shorter tokens are refused: a guessable token on a network-facing server protects nothing."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def read_token(token_file: str | None, environ: MutableMapping[str, str] | None = None) -> str | None:
    """The configured bearer token: `--token-file`'s content, else `DURABLE_RECALL_TOKEN`, else `None`.

    Raises:
        CliError: The file cannot be read, or the token is empty or shorter than 16 characters.
    """
    env = os.environ if environ is None else environ
    if token_file is not None:
        try:
            token = Path(token_file).expanduser().read_text(encoding='utf-8').strip()
        except (OSError, UnicodeDecodeError) as error:
            raise CliError(f'cannot read --token-file {token_file!r}: {error}', status=EXIT_USAGE) from None
        where = f'--token-file {token_file!r}'
    else:
        raw = env.get(TOKEN_ENV)
        if raw is None:
            return None
        token, where = raw.strip(), TOKEN_ENV
    if len(token) < _MIN_TOKEN_LENGTH:
        raise CliError(
            f'the token from {where} is {len(token)} characters long: use at least {_MIN_TOKEN_LENGTH} '
            '(for example `python -c "import secrets; print(secrets.token_urlsafe(32))"`)',
            status=EXIT_USAGE,
        )
    return token


def is_loopback(host: str) -> bool:
    """Whether `host` binds the loopback interface only (`localhost`, 127.0.0.0/8, ::1)."""
    if host.strip().lower() == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host.strip().strip('[]')).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve stored conversations beyond loopback without a token.

    Raises:
        CliError: `host` is not a loopback address and no token is configured.
    """
    if token is None and not is_loopback(host):
        raise CliError(
            f'--host {host} is not a loopback address: anyone who reaches it could read the store, so a bearer '
            f'token is required: set {TOKEN_ENV} or pass --token-file PATH',
            status=EXIT_USAGE,
        )


class BearerTokenMiddleware:
    """ASGI middleware: a request without `Authorization: Bearer <token>` gets 401 and reaches nothing.

    With `browser=True` (the inspector) HTTP Basic credentials whose password is the token are accepted
    too, and a 401 asks for them: that is the one way a browser sends a secret with every request
    without a login form (which would be a request that changes state) or a token in the URL (which
    ends up in history and logs).
    """

    def __init__(self, app: App, token: str, *, browser: bool = False) -> None:
        self._app = app
        self._expected = f'Bearer {token}'.encode()
        self._token = token.encode()
        self._browser = browser

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope['type'] not in ('http', 'websocket'):
            await self._app(scope, receive, send)
            return
        given = b''
        for name, value in scope.get('headers', ()):
            if name == b'authorization':
                given = value
                break
        if hmac.compare_digest(given, self._expected) or (self._browser and self._basic_matches(given)):
            await self._app(scope, receive, send)
            return
        if scope['type'] == 'websocket':
            await send({'type': 'websocket.close', 'code': 1008})
            return
        body = b'401 Unauthorized: send the bearer token (Authorization: Bearer <token>)\n'
        await send(
            {
                'type': 'http.response.start',
                'status': 401,
                'headers': [
                    (b'content-type', b'text/plain; charset=utf-8'),
                    (b'content-length', str(len(body)).encode()),
                    (b'www-authenticate', _BASIC if self._browser else b'Bearer'),
                ],
            }
        )
        await send({'type': 'http.response.body', 'body': body})

    def _basic_matches(self, given: bytes) -> bool:
        scheme, _, encoded = given.partition(b' ')
        if scheme.lower() != b'basic':
            return False
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True)
        except ValueError:
            return False
        return hmac.compare_digest(decoded.partition(b':')[2], self._token)
