"""`docker-compose.yml`, checked without Docker (no engine runs here): services, ports, wiring, the worker command.

What `docker compose up` needs to get right and a typo would silently break: every address a
service is given names another service of the file, the store URL's credentials and database
are the ones the Postgres service creates, the worker reads exactly the variables the compose
file sets, and its command is the sample worker's module, which the image contains.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
import yaml
from workflows.conversation import STORE_VARIABLE, open_store_from_env
from workflows.temporal import ADDRESS_VARIABLE, temporal_address, worker

from durable_recall import PostgresStepStore

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_COMMAND = ['python', '-m', 'workflows.temporal.worker']


@pytest.fixture(scope='module')
def services() -> dict[str, dict[str, Any]]:
    compose = yaml.safe_load((REPO_ROOT / 'docker-compose.yml').read_text())
    return cast(dict[str, dict[str, Any]], compose['services'])


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get('environment', {})
    if isinstance(env, list):  # the `- KEY=value` form
        env = dict(item.split('=', 1) for item in cast(list[str], env))
    return {key: str(value) for key, value in cast(dict[str, Any], env).items()}


def container_ports(service: dict[str, Any]) -> set[int]:
    return {int(str(mapping).rsplit(':', 1)[-1]) for mapping in service.get('ports', [])}


def test_services_and_ports(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) >= {'temporal', 'temporal-ui', 'postgresql', 'worker'}
    assert services['temporal']['image'].startswith('temporalio/auto-setup:')
    assert services['temporal-ui']['image'].startswith('temporalio/ui:')
    assert services['postgresql']['image'].startswith('postgres:')
    assert 7233 in container_ports(services['temporal'])
    assert 8080 in container_ports(services['temporal-ui'])
    assert 5432 in container_ports(services['postgresql'])
    assert 'healthcheck' in services['postgresql']


def test_temporal_uses_the_postgres_service(services: dict[str, dict[str, Any]]) -> None:
    temporal, postgres = environment(services['temporal']), environment(services['postgresql'])
    assert temporal['DB'] == 'postgres12'
    assert temporal['POSTGRES_SEEDS'] in services
    assert (temporal['POSTGRES_USER'], temporal['POSTGRES_PWD']) == (
        postgres['POSTGRES_USER'],
        postgres['POSTGRES_PASSWORD'],
    )
    assert 'postgresql' in services['temporal']['depends_on']
    host, port = environment(services['temporal-ui'])['TEMPORAL_ADDRESS'].split(':')
    assert host in services and int(port) in container_ports(services[host])


def test_worker_is_configured_by_environment(services: dict[str, dict[str, Any]]) -> None:
    env = environment(services['worker'])
    postgres = environment(services['postgresql'])

    host, port = env[ADDRESS_VARIABLE].split(':')
    assert host == 'temporal' and int(port) == 7233

    url = urlsplit(env[STORE_VARIABLE])
    assert url.scheme == 'postgresql'
    assert url.hostname in services and url.port == 5432
    assert (url.username, url.password) == (postgres['POSTGRES_USER'], postgres['POSTGRES_PASSWORD'])
    assert url.path == f'/{postgres["POSTGRES_DB"]}'

    assert set(services['worker']['depends_on']) == {'temporal', 'postgresql'}


def test_worker_reads_the_variables_compose_sets(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in environment(services['worker']).items():
        monkeypatch.setenv(name, value)
    assert temporal_address() == 'temporal:7233'
    store = open_store_from_env()
    assert isinstance(store, PostgresStepStore) and '@postgresql:5432/durable_recall' in repr(store)


def test_worker_command_is_the_sample_worker(services: dict[str, dict[str, Any]]) -> None:
    service = services['worker']
    assert service['command'] == WORKER_COMMAND
    module = WORKER_COMMAND[-1]
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin == str(REPO_ROOT / 'workflows' / 'temporal' / 'worker.py')
    assert inspect.iscoroutinefunction(worker.main)

    build = service['build']
    dockerfile = (REPO_ROOT / build['context'] / build['dockerfile']).read_text()
    (cmd,) = re.findall(r'^CMD (.+)$', dockerfile, re.MULTILINE)
    assert json.loads(cmd) == WORKER_COMMAND, 'the image runs the same command by default'
    copied = re.findall(r'^COPY (\S+) ', dockerfile, re.MULTILINE)
    assert {'src', 'workflows'} <= set(copied), 'the image holds the library and the samples'


def test_the_worker_runs_unprivileged(services: dict[str, dict[str, Any]]) -> None:
    service = services['worker']
    build = service['build']
    dockerfile = (REPO_ROOT / build['context'] / build['dockerfile']).read_text()
    users = re.findall(r'^USER (\S+)$', dockerfile, re.MULTILINE)
    assert users, 'the image sets a user'
    uid = users[-1].split(':')[0]
    assert uid.isdigit() and int(uid) != 0, 'the last USER is a numeric, non-root uid'
    assert dockerfile.index(f'USER {users[-1]}') > dockerfile.index('RUN pip install'), 'installed as root, run as not'
    (workdir,) = re.findall(r'^WORKDIR (\S+)$', dockerfile[dockerfile.index('USER ') :], re.MULTILINE)
    assert workdir.startswith('/home/'), 'the default SQLite store is created where the user may write'
    assert re.search(r'^ENV PYTHONPATH=/app$', dockerfile, re.MULTILINE), 'the samples import from /app'
    assert str(service['user']).split(':')[0] == uid
    assert service['cap_drop'] == ['ALL']
    assert 'no-new-privileges:true' in service['security_opt']
    assert not any('--store' in str(part) or '--postgres' in str(part) for part in service['command']), (
        'the store URL (with its password) goes in the environment, never on the command line `ps` shows'
    )
