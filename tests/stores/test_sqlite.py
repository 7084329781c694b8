"""SQLite specifics: paths, schema versions, locking, and several processes sharing one file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import cast

import anyio
import pytest
from pydantic_ai.messages import UserPromptPart

from durable_recall.base import _errors, from_micros
from durable_recall.stores import SqliteStepStore
from durable_recall.stores._migrations import SCHEMA_VERSION

from ._helpers import delta, messages, registration, save_history

pytestmark = pytest.mark.anyio


def sql(path: Path, statement: str, *params: object) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        return conn.execute(statement, params).fetchall()


def test_construction_needs_no_event_loop_and_opens_the_file_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'

    store = SqliteStepStore(path)

    assert path.exists()
    assert sql(path, 'PRAGMA journal_mode') == [('wal',)]
    assert repr(store) == f'SqliteStepStore({str(path)!r})'


@pytest.mark.parametrize(
    'where',
    [
        pytest.param(lambda tmp: tmp / 'missing-dir' / 'store.db', id='missing-directory'),
        pytest.param(lambda tmp: tmp / 'a-file.txt' / 'store.db', id='under-a-file'),
        pytest.param(lambda tmp: tmp, id='a-directory'),
        pytest.param(lambda tmp: Path('/proc/durable-recall-test.db'), id='proc'),
    ],
)
def test_an_unusable_path_fails_at_construction(tmp_path: Path, where: Callable[[Path], Path]) -> None:
    (tmp_path / 'a-file.txt').write_text('not a directory')
    path = where(tmp_path)

    with pytest.raises(_errors.StoreConfigurationError) as caught:
        SqliteStepStore(path)

    assert str(path) in caught.value.message
    assert 'directory exists and is writable' in caught.value.message


async def test_a_file_that_is_not_a_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / 'notes.db'
    path.write_text('my precious notes, not a database ' * 100)

    with pytest.raises(_errors.StoreConfigurationError, match='notes.db'):
        SqliteStepStore(path)

    assert path.read_text().startswith('my precious notes')


async def test_the_schema_is_versioned(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    await store.register_run(registration('run-1'))
    await store.aclose()

    assert sql(path, "SELECT value FROM dr_meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    tables = {name for (name,) in sql(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert SCHEMA_VERSION == 15

    def columns(table: str) -> list[tuple[object, ...]]:
        return [(name, kind, notnull) for _, name, kind, notnull, *_ in sql(path, f'PRAGMA table_info({table})')]

    # Runs are numbered (version 13): a rowid table whose numbers are never reused, and a unique id.
    assert columns('dr_runs')[:2] == [('run_no', 'INTEGER', 0), ('run_id', 'TEXT', 1)]
    assert sql(
        path, "SELECT sql LIKE '%run_no INTEGER PRIMARY KEY AUTOINCREMENT%' FROM sqlite_master WHERE name = 'dr_runs'"
    ) == [(1,)]
    assert sql(path, 'SELECT run_no, run_id FROM dr_runs') == [(1, 'run-1')]
    # Every message row holds a body; inherited entries are ranges of references, a table of their own;
    # both name their runs by number.
    assert columns('dr_messages') == [('run_no', 'INTEGER', 1), ('seq', 'INTEGER', 1), ('body', 'BLOB', 1)]
    assert columns('dr_message_refs') == [
        ('run_no', 'INTEGER', 1),
        ('seq', 'INTEGER', 1),
        ('count', 'INTEGER', 1),
        ('ref_run_no', 'INTEGER', 1),
        ('ref_seq', 'INTEGER', 1),
    ]
    # Snapshot rows keep the run's id: a run row lost to damage is still named by its snapshots.
    assert columns('dr_snapshots')[0] == ('run_id', 'TEXT', 1)
    # A rowid table (bodies stay in its pages instead of spilling to overflow pages) with a unique index.
    assert sql(path, "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = 'dr_messages'") == [(0,)]
    assert [row[1:3] for row in sql(path, 'PRAGMA index_list(dr_messages)')] == [('dr_messages_by_seq', 1)]
    assert sql(path, "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = 'dr_message_refs'") == [(1,)]
    # The index's state keeps its declared type: TEXT affinity stores the bytes bound as a BLOB.
    assert ('state', 'TEXT', 1) in columns('dr_index_runs')
    # Hybrid ranking's message vectors (version 9): a rowid table, a row per run and model.
    assert columns('dr_vectors') == [
        ('run_id', 'TEXT', 1),
        ('model', 'TEXT', 1),
        ('seen', 'INTEGER', 1),
        ('dim', 'INTEGER', 1),
        ('hashes', 'BLOB', 1),
        ('vectors', 'BLOB', 1),
    ]
    assert [row[1:3] for row in sql(path, 'PRAGMA index_list(dr_vectors)')] == [('dr_vectors_by_run', 1)]
    assert tables == {
        'sqlite_sequence',  # AUTOINCREMENT's: the highest run number given
        'dr_meta',
        'dr_runs',
        'dr_messages',
        'dr_message_refs',
        'dr_snapshots',
        'dr_pending',
        'dr_index_scopes',
        'dr_index_runs',
        'dr_index_postings',
        'dr_index_hashes',
        'dr_vectors',
        'dr_conversation_keys',  # version 15: the journal codecs' keys (tests/stores/test_conversation_keys.py)
    }


@pytest.mark.parametrize(('version', 'error'), [('99', 'schema version 99'), ('x', "version 'x'")])
async def test_a_database_from_a_newer_release_is_refused(tmp_path: Path, version: str, error: str) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    await store.register_run(registration('run-1', conversation_id='kept'))
    await store.aclose()
    sql(path, "UPDATE dr_meta SET value = ? WHERE key = 'schema_version'", version)

    with pytest.raises(_errors.StoreConfigurationError, match=error):
        SqliteStepStore(path)

    assert sql(path, 'SELECT run_id, conversation_id FROM dr_runs') == [('run-1', 'kept')]


async def test_a_held_write_lock_raises_unavailable_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path, busy_timeout=0.1)
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0)])
    before = await store.list_snapshots('run-1')

    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute('BEGIN IMMEDIATE')
        with pytest.raises(_errors.StoreUnavailableError, match='busy_timeout'):
            await save_history(store, 'run-1', [messages(0), messages(0, 1)], start=1)
        assert await store.list_snapshots('run-1') == before  # WAL readers are not blocked
        other.execute('ROLLBACK')

    await save_history(store, 'run-1', [messages(0), messages(0, 1)], start=1)
    assert [s.messages for s in await store.list_snapshots('run-1')] == [messages(0), messages(0, 1)]
    await store.aclose()


async def test_data_survives_closing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(str(path))
    record = await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0), messages(0, 1)])
    snapshots = await store.list_snapshots('run-1')
    await store.aclose()

    # A closed store reopens on next use; a second store sees the same rows.
    assert await store.get_run('run-1') == record
    await store.aclose()
    reopened = SqliteStepStore(path)
    assert await reopened.list_runs() == [record]
    assert await reopened.list_snapshots('run-1') == snapshots
    await reopened.aclose()


WRITER = textwrap.dedent(
    """
    import sys
    import time
    from pathlib import Path

    import anyio

    from durable_recall.base import RunRegistration, SnapshotDelta, dump_messages
    from durable_recall.stores import SqliteStepStore
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    path, prefix = sys.argv[1], sys.argv[2]


    async def main() -> None:
        store = SqliteStepStore(path)
        # Start writing only when the other writer is ready too, so that the two really overlap.
        Path(f'{path}.ready-{prefix}').touch()
        while not Path(f'{path}.go').exists():
            time.sleep(0.005)
        for r in range(8):
            run_id = f'{prefix}-{r}'
            await store.register_run(RunRegistration(run_id=run_id, conversation_id=prefix, token=prefix))
            for i in range(6):
                [body] = dump_messages([ModelRequest(parts=[UserPromptPart(content=f'{run_id}:{i}')])])
                segments = [(0, i), (-1, 1)] if i else [(-1, 1)]
                delta = SnapshotDelta(
                    run_id=run_id, index=i, step_index=i, state='complete', segments=segments, messages=[body]
                )
                assert await store.save_snapshot(delta)
        await store.aclose()


    anyio.run(main)
    """
)


async def test_two_processes_write_one_file_concurrently(tmp_path: Path) -> None:
    path = tmp_path / 'shared.db'
    writers = [
        subprocess.Popen([sys.executable, '-c', WRITER, str(path), prefix], stderr=subprocess.PIPE, text=True)
        for prefix in ('left', 'right')
    ]
    deadline = time.monotonic() + 30
    while not all(Path(f'{path}.ready-{prefix}').exists() for prefix in ('left', 'right')):
        assert time.monotonic() < deadline, 'the writers did not start'
        for writer in writers:
            if writer.poll() is not None:  # name why: a bare 'died' once failed CI and never reproduced
                _, stderr = writer.communicate()
                raise AssertionError(f'a writer died before starting ({writer.returncode}): {stderr}')
        time.sleep(0.01)
    Path(f'{path}.go').touch()
    for writer in writers:
        _, stderr = writer.communicate(timeout=60)
        assert writer.returncode == 0, stderr

    store = SqliteStepStore(path)
    runs = await store.list_runs()
    assert sorted(r.run_id for r in runs) == sorted(f'{p}-{r}' for p in ('left', 'right') for r in range(8))
    for run in runs:
        snapshots = await store.list_snapshots(run.run_id)
        assert [len(s.messages) for s in snapshots] == [1, 2, 3, 4, 5, 6]
        parts = [part for message in snapshots[-1].messages for part in message.parts]
        contents = [part.content for part in parts if isinstance(part, UserPromptPart)]
        assert contents == [f'{run.run_id}:{i}' for i in range(6)]
    assert sql(path, 'SELECT COUNT(*) FROM dr_messages') == [(16 * 6,)]
    await store.aclose()


async def test_rows_hold_compact_ranges_and_sortable_timestamps(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    await store.register_run(registration('run-1'))
    await save_history(store, 'run-1', [messages(0, 1, 2), messages(0, 2, 3)])
    await store.aclose()

    assert sql(path, 'SELECT idx, ranges, size FROM dr_snapshots ORDER BY idx') == [
        (0, '[[0,3]]', 3),
        (1, '[[0,1],[2,4]]', 3),
    ]
    # Times are integer microseconds since the epoch (schema version 11): they sort as time does.
    [(started_at,)] = sql(path, 'SELECT started_at FROM dr_runs')
    saved = [at for (at,) in sql(path, 'SELECT saved_at FROM dr_snapshots ORDER BY idx')]
    assert isinstance(started_at, int) and all(isinstance(at, int) for at in saved)
    assert started_at <= cast(int, saved[0]) <= cast(int, saved[1])
    record = await SqliteStepStore(path).get_run('run-1')
    assert record is not None and from_micros(started_at) == record.started_at


async def test_concurrent_saves_of_one_delta_append_once(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    writers = [SqliteStepStore(path) for _ in range(3)]
    await writers[0].register_run(registration('run-1'))
    outcomes: list[bool] = []

    async def save(store: SqliteStepStore) -> None:
        outcomes.append(await store.save_snapshot(delta('run-1', 0, [], messages(0, 1))))

    async with anyio.create_task_group() as group:
        for store in writers:
            group.start_soon(save, store)

    assert sorted(outcomes) == [False, False, True]
    assert sql(path, 'SELECT COUNT(*) FROM dr_messages') == [(2,)]
    for store in writers:
        await store.aclose()
