"""An unreachable Postgres server, refusing or silent, gives StoreUnavailableError quickly, never a hang."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from durable_recall.base import _errors
from durable_recall.stores import PostgresStepStore

from ._helpers import registration

pytestmark = pytest.mark.anyio


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen(8)
        yield server.getsockname()[1]


async def test_a_refused_connection_raises_unavailable_quickly() -> None:
    port = closed_port()
    store = PostgresStepStore(f'postgresql://user:secret@127.0.0.1:{port}/test', connect_timeout=2)
    started = time.monotonic()

    for call in (store.get_run('run-1'), store.register_run(registration('run-1'))):
        with pytest.raises(_errors.StoreUnavailableError) as caught:
            await call
        message = str(caught.value)
        assert f'127.0.0.1:{port}' in message
        assert 'secret' not in message
        assert 'user:***@' in message
        assert 'Check that the server is running' in message

    assert time.monotonic() - started < 2
    await store.aclose()


async def test_a_silent_server_times_out_instead_of_hanging(silent_server: int) -> None:
    store = PostgresStepStore(f'postgresql://postgres@127.0.0.1:{silent_server}/test', connect_timeout=0.5)
    started = time.monotonic()

    with pytest.raises(_errors.StoreUnavailableError, match='no answer within 0.5s'):
        await store.list_conversations()

    assert time.monotonic() - started < 3
