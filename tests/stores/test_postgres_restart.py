"""A Postgres server that restarts costs no failed operation; one that is down gives StoreUnavailableError.

These tests start a private server (`initdb` and `pg_ctl`, from the PostgreSQL binaries installed
under /usr/lib/postgresql) on a free port, because they stop and restart it: the shared server
on 127.0.0.1:5432 is never touched. As root, the server runs as the `postgres` user (Postgres
refuses to run as root), in a temporary directory that user owns.
"""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from durable_recall import PostgresStepStore
from durable_recall.errors import StoreUnavailableError
from durable_recall.stores import RunRegistration
from tests._services._skip import missing_service

pytestmark = pytest.mark.anyio


def _binary(name: str) -> str | None:
    found = sorted(glob.glob(f'/usr/lib/postgresql/*/bin/{name}'))
    return found[-1] if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@dataclass
class PrivateServer:
    """A throwaway Postgres cluster this test may stop and restart."""

    data: Path
    port: int
    prefix: list[str]
    pg_ctl: str

    @property
    def url(self) -> str:
        return f'postgresql://postgres@127.0.0.1:{self.port}/postgres'

    def _ctl(self, *args: str) -> None:
        subprocess.run([*self.prefix, self.pg_ctl, '-D', str(self.data), '-w', *args], check=True, capture_output=True)

    def start(self) -> None:
        options = f'-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off'
        self._ctl('-l', str(self.data / 'server.log'), '-o', options, 'start')

    def stop(self) -> None:
        self._ctl('-m', 'fast', 'stop')


@pytest.fixture
def private_server() -> Iterator[PrivateServer]:
    initdb, pg_ctl = _binary('initdb'), _binary('pg_ctl')
    if initdb is None or pg_ctl is None:
        missing_service('initdb and pg_ctl are not installed (apt-get install postgresql)')
    assert initdb is not None and pg_ctl is not None
    prefix: list[str] = []
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam('postgres')
        except KeyError:
            missing_service('running as root and there is no postgres user to run a private server as')
        assert owner is not None
        prefix = ['runuser', '-u', 'postgres', '--']
    # Not pytest's tmp_path: its parents are private to the user running the tests.
    root = Path(tempfile.mkdtemp(prefix='durable-recall-pg-'))
    data = root / 'data'
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    subprocess.run(
        [*prefix, initdb, '-D', str(data), '-U', 'postgres', '-A', 'trust', '--no-sync'],
        check=True,
        capture_output=True,
    )
    server = PrivateServer(data, _free_port(), prefix, pg_ctl)
    server.start()
    try:
        yield server
    finally:
        subprocess.run([*prefix, pg_ctl, '-D', str(data), '-m', 'immediate', 'stop'], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def anyio_backend() -> str:
    return 'asyncio'


def _registration(number: int) -> RunRegistration:
    return RunRegistration(run_id=f'run-{number}', conversation_id='c1', token=f'token-{number}')


async def _fill_pool(store: PostgresStepStore) -> None:
    """Use the store from several tasks at once, so that the pool holds several idle connections."""
    await asyncio.gather(*(store.register_run(_registration(number)) for number in range(6)))
    await asyncio.gather(*(store.list_runs(conversation_id='c1') for _ in range(6)))


async def test_a_restarted_server_costs_no_failed_operation(private_server: PrivateServer) -> None:
    store = PostgresStepStore(private_server.url, connect_timeout=3)
    try:
        await _fill_pool(store)
        for restart in range(2):
            private_server.stop()
            private_server.start()
            # Every idle connection in the pool is now dead; none of these may fail.
            assert len(await store.list_runs(conversation_id='c1')) == 6 + restart
            await store.register_run(_registration(100 + restart))
            await _fill_pool(store)
    finally:
        await store.aclose()


async def test_an_outage_is_store_unavailable_and_the_store_recovers(private_server: PrivateServer) -> None:
    store = PostgresStepStore(private_server.url, connect_timeout=2)
    try:
        await _fill_pool(store)
        private_server.stop()
        for operation in (
            lambda: store.list_runs(conversation_id='c1'),
            lambda: store.register_run(_registration(50)),
            lambda: store.get_run('run-1'),
        ):
            with pytest.raises(StoreUnavailableError, match='is unavailable') as raised:
                await operation()
            assert raised.value.__cause__ is not None
            assert 'operation is safe to retry' in str(raised.value)
        private_server.start()
        assert await store.get_run('run-1') is not None
    finally:
        await store.aclose()


async def test_a_store_first_used_during_an_outage(private_server: PrivateServer) -> None:
    private_server.stop()
    store = PostgresStepStore(private_server.url, connect_timeout=2)
    try:
        with pytest.raises(StoreUnavailableError) as raised:
            await store.list_runs()
        assert raised.value.__cause__ is not None
        private_server.start()
        assert await store.list_runs() == []
    finally:
        await store.aclose()
