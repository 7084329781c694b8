"""One GET through an ASGI app in this process, with no server and no network.

What a request costs the inspector (`inspector_page`), and what its tests read when they need no browser.
"""

from __future__ import annotations

from typing import Any

__all__ = ('asgi_get',)


async def asgi_get(app: Any, target: str) -> tuple[int, str]:
    path, _, query = target.partition('?')
    scope = {
        'type': 'http',
        'asgi': {'version': '3.0'},
        'http_version': '1.1',
        'method': 'GET',
        'scheme': 'http',
        'path': path,
        'raw_path': path.encode(),
        'query_string': query.encode(),
        'headers': [(b'host', b'127.0.0.1')],
        'client': ('127.0.0.1', 1),
        'server': ('127.0.0.1', 80),
    }
    status = 0
    body = bytearray()

    async def receive() -> dict[str, Any]:
        return {'type': 'http.request', 'body': b'', 'more_body': False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message['type'] == 'http.response.start':
            status = message['status']
        elif message['type'] == 'http.response.body':
            body.extend(message.get('body', b''))

    await app(scope, receive, send)
    return status, body.decode()
