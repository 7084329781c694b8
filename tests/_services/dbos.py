"""DBOS test service: a launched DBOS on an SQLite or a PostgreSQL system database.

Fixtures (all function-scoped; DBOS is a process-wide singleton, so one test has one DBOS). The
ones that launch DBOS are async fixtures, for `@pytest.mark.anyio` tests (see `launched_dbos`):
    `dbos_system_db` (params `'sqlite'`, `'postgres'`): a `DBOSSystemDB` naming the kind and the
        system database URL. The SQLite one is a file in `tmp_path`; the PostgreSQL one is the fresh,
        empty database from `postgres_database_url` (requested only for that param, so SQLite runs
        never touch PostgreSQL).
    `dbos`: DBOS launched on `dbos_system_db` (so a test using it runs once per kind), destroyed
        on teardown.
    `dbos_sqlite`, `dbos_postgres`: DBOS launched on one kind only.

Order of things, which DBOS dictates: `@DBOS.workflow`/`@DBOS.step` (and so `Agent(...,
capabilities=[DBOSDurability()])`, which registers its steps while the agent is constructed) record
into DBOS's process-wide registry, which exists before any `DBOS(...)` instance and survives
`DBOS.destroy()` (its `destroy_registry` defaults to `False`). So build durable agents and define
workflows once, at module level (or in session-scoped fixtures), and let these fixtures create,
launch and destroy DBOS around each test: every launch picks up everything registered so far. Define
workflow functions at module level: defining one inside a test registers it again on every run,
which DBOS logs as a duplicate registration.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

if TYPE_CHECKING:
    from dbos import DBOS, DBOSConfig, Serializer

DBOSSystemDBKind = Literal['sqlite', 'postgres']

DBOS_APP_NAME = 'durable_recall_tests'


@dataclass(frozen=True)
class DBOSSystemDB:
    kind: DBOSSystemDBKind
    url: str


def sqlite_system_db(directory: Path) -> DBOSSystemDB:
    return DBOSSystemDB('sqlite', f'sqlite:///{directory / "dbos_system.sqlite"}')


def postgres_system_db(database_url: str) -> DBOSSystemDB:
    # DBOS picks its driver (psycopg 3) from a plain `postgresql://` URL; strip any explicit driver.
    scheme, sep, rest = database_url.partition('://')
    if scheme.startswith('postgres'):
        scheme = 'postgresql'
    return DBOSSystemDB('postgres', f'{scheme}{sep}{rest}')


@pytest.fixture(params=['sqlite', pytest.param('postgres', marks=pytest.mark.postgres)])
def dbos_system_db(request: pytest.FixtureRequest, tmp_path: Path) -> DBOSSystemDB:
    if request.param == 'sqlite':
        return sqlite_system_db(tmp_path)
    return postgres_system_db(request.getfixturevalue('postgres_database_url'))


@asynccontextmanager
async def launched_dbos(system_db: DBOSSystemDB, *, serializer: Serializer | None = None) -> AsyncGenerator[DBOS]:
    """Create and launch DBOS on `system_db`, yield it, and destroy it (its registry is kept).

    Async because DBOS changes the running event loop: its async API makes its own thread pool the
    loop's default executor, and `DBOS.destroy()` shuts that pool down. The test loop may outlive
    this DBOS (anyio keeps one loop for the session while a session-scoped async fixture such as
    `temporal_env` is alive), and a later `asyncio.to_thread` or `loop.getaddrinfo` on it would then
    fail with "cannot schedule new futures after shutdown", so teardown gives the loop a fresh one.
    """
    from dbos import DBOS

    loop = asyncio.get_running_loop()

    DBOS.destroy()  # A test that crashed before its teardown must not leave its instance to the next one.
    config: DBOSConfig = {
        'name': DBOS_APP_NAME,
        'system_database_url': system_db.url,
        'enable_otlp': False,
        'log_level': 'WARNING',
        # Poll for notifications quickly: tests wait on them (and on shutdown) in real time.
        'notification_listener_polling_interval_sec': 0.01,
    }
    if serializer is not None:
        config['serializer'] = serializer
    dbos = DBOS(config=config)
    try:
        DBOS.launch()
        yield dbos
    finally:
        DBOS.destroy()
        loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix='asyncio-after-dbos'))


@pytest.fixture
async def dbos(dbos_system_db: DBOSSystemDB) -> AsyncIterator[DBOS]:
    async with launched_dbos(dbos_system_db) as launched:
        yield launched


@pytest.fixture
async def dbos_sqlite(tmp_path: Path) -> AsyncIterator[DBOS]:
    async with launched_dbos(sqlite_system_db(tmp_path)) as launched:
        yield launched


@pytest.fixture
async def dbos_postgres(postgres_database_url: str) -> AsyncIterator[DBOS]:
    async with launched_dbos(postgres_system_db(postgres_database_url)) as launched:
        yield launched


_DBOS_FIXTURES = frozenset({'dbos_system_db', 'dbos', 'dbos_sqlite', 'dbos_postgres'})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a DBOS fixture with `dbos`, so `-m 'not dbos'` can deselect it."""
    for item in items:
        if _DBOS_FIXTURES.intersection(getattr(item, 'fixturenames', ())):
            item.add_marker(pytest.mark.dbos)


async def dbos_step_names(workflow_id: str) -> list[str]:
    """The names of the steps DBOS recorded for `workflow_id`, in order."""
    from dbos import DBOS

    return [step['function_name'] for step in await DBOS.list_workflow_steps_async(workflow_id)]


async def reexecute_workflow(workflow_id: str) -> object:
    """Run a finished workflow's code again, as DBOS recovery does after a crash, and return its result.

    The workflow is marked `PENDING` again and recovered: DBOS re-executes the workflow function,
    and every step it already recorded returns its recorded output instead of running. This wraps
    DBOS internals (`_sys_db`, `_recover_pending_workflows`), kept in this one helper so a DBOS
    upgrade that moves them breaks one place.
    """
    import sqlalchemy as sa
    from dbos import DBOS
    from dbos._dbos import _get_dbos_instance
    from dbos._schemas.system_database import SystemSchema

    sys_db = _get_dbos_instance()._sys_db
    table = SystemSchema.workflow_status
    with sys_db.engine.begin() as conn:
        conn.execute(
            sa.update(table)
            .where(table.c.workflow_uuid == workflow_id)
            .values(status='PENDING', output=None, executor_id='local')
        )
    handles = [h for h in DBOS._recover_pending_workflows(['local']) if h.get_workflow_id() == workflow_id]
    assert len(handles) == 1, f'DBOS did not recover {workflow_id!r}'
    return await asyncio.to_thread(handles[0].get_result)
