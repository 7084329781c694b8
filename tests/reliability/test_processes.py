"""Writers killed mid-transaction, and writers in several processes at once (SQLite, Postgres).

Run with `-s` for the figures (crashes survived, runs and messages checked).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import anyio

from durable_recall import PostgresStepStore, SqliteStepStore
from durable_recall.base._codec import dump_messages
from durable_recall.stores import StepStore

from ._writer import BATCH, SNAPSHOTS, history

ROOT = Path(__file__).resolve().parents[2]
KILLS = 10
PROCESSES = 2
RUNS_PER_PROCESS = 20


def _start(store: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, '-m', 'tests.reliability._writer', store, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # This checkout's sources first: an editable install may point at another checkout.
        env={**os.environ, 'PYTHONPATH': os.pathsep.join([str(ROOT / 'src'), str(ROOT)])},
    )


async def _verify(store: StepStore, prefixes: list[str]) -> tuple[int, int, list[int]]:
    """Every run of these writers reads back as a whole number of batches of what was written.

    Returns:
        Runs, messages read back, and each run's snapshot count.
    """
    runs = [record for record in await store.list_runs() if record.run_id.rsplit('-', 1)[0] in prefixes]
    assert len({record.run_id for record in runs}) == len(runs)
    counts: list[int] = []
    total = 0
    for record in runs:
        snapshots = await store.list_snapshots(record.run_id, include_interrupted=True)
        counts.append(len(snapshots))
        assert len(snapshots) % BATCH == 0, f'{record.run_id}: a batch was half-written ({len(snapshots)} snapshots)'
        for index, snapshot in enumerate(snapshots):
            assert snapshot.index == index
            assert dump_messages(snapshot.messages) == dump_messages(history(record.run_id, index))
        if snapshots:
            log = await store.read_messages(record.run_id, list(range(4 * SNAPSHOTS)))
            assert dump_messages([log[seq] for seq in sorted(log)]) == dump_messages(snapshots[-1].messages)
            total += len(log)
    return len(runs), total, counts


def test_a_writer_killed_mid_transaction_leaves_whole_batches(tmp_path: Path) -> None:
    path = str(tmp_path / 'killed.db')
    rng = random.Random(14)
    prefixes: list[str] = []
    for attempt in range(KILLS):
        prefix = f'kill{attempt}'
        prefixes.append(prefix)
        writer = _start(path, '--prefix', prefix, '--tasks', '4', '--forever')
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == 'ready', writer.stderr.read() if writer.stderr else ''
        try:
            writer.wait(timeout=rng.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        assert writer.returncode == -signal.SIGKILL

    async def check() -> tuple[int, int, list[int]]:
        store = SqliteStepStore(path)
        try:
            return await _verify(store, prefixes)
        finally:
            await store.aclose()

    runs, total, counts = anyio.run(check)
    partial = sum(1 for count in counts if count < SNAPSHOTS)
    print(
        f'\nreliability: SIGKILL of a SQLite writer mid-write, {KILLS} times: crashes survived {KILLS}; '
        f'{runs} runs read back ({partial} cut short at a batch boundary), {total} messages; half-written batches 0'
    )
    assert runs > 0


def _concurrent(store: str, store_args: list[str], open_store: StepStore, label: str) -> None:
    prefixes = [f'proc{number}' for number in range(PROCESSES)]
    writers = [
        _start(
            store, *store_args, '--prefix', prefix, '--runs', str(RUNS_PER_PROCESS), '--tasks', str(RUNS_PER_PROCESS)
        )
        for prefix in prefixes
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err

    async def check() -> tuple[int, int, list[int]]:
        try:
            return await _verify(open_store, prefixes)
        finally:
            await open_store.aclose()

    runs, total, counts = anyio.run(check)
    assert runs == PROCESSES * RUNS_PER_PROCESS and set(counts) == {SNAPSHOTS}
    assert total == runs * 2 * SNAPSHOTS  # every message once: each snapshot adds two
    print(
        f'\nreliability: {PROCESSES} processes x {RUNS_PER_PROCESS} concurrent runs on {label}: '
        f'{runs} runs, {total} messages, each present exactly once'
    )


def test_concurrent_writers_on_sqlite(tmp_path: Path) -> None:
    path = str(tmp_path / 'concurrent.db')
    anyio.run(_create_sqlite, path)
    _concurrent(path, [], SqliteStepStore(path), 'SQLite')


async def _create_sqlite(path: str) -> None:
    store = SqliteStepStore(path)
    await store.list_conversations()
    await store.aclose()


def test_concurrent_writers_on_postgres(postgres_url: str, postgres_schema: str) -> None:
    _concurrent(
        postgres_url, ['--schema', postgres_schema], PostgresStepStore(postgres_url, schema=postgres_schema), 'Postgres'
    )
