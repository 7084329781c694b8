"""A writer process for the reliability tests: runs with deterministic snapshots, written in batches.

`python -m tests.reliability._writer STORE [--schema S] --prefix P --runs N --tasks T [--forever]`

Each run `P-<i>` is registered, then its `SNAPSHOTS` snapshots are saved `BATCH` at a time with
`save_snapshots` (one transaction per batch, as `StepPersistence` writes in workflow code). `T`
runs are written concurrently by tasks sharing one store object. The line `ready` is printed
once the store is open, so that a test can time a kill to land amid the writes.
"""

from __future__ import annotations

import argparse
import itertools
import sys

import anyio
from pydantic_ai.messages import ModelMessage

from durable_recall.base._records import RunRegistration, SnapshotDelta
from durable_recall.stores import PostgresStepStore, SqliteStepStore, StepStore
from tests.stores._helpers import delta, messages

SNAPSHOTS = 8
BATCH = 4


def history(run_id: str, index: int) -> list[ModelMessage]:
    """Snapshot `index` of a run: two more messages than the one before (distinct per run by offset)."""
    offset = sum(map(ord, run_id)) % 1000 * 100
    return messages(*range(offset, offset + 2 * index + 2))


def deltas(run_id: str) -> list[SnapshotDelta]:
    return [
        delta(run_id, index, history(run_id, index - 1) if index else [], history(run_id, index))
        for index in range(SNAPSHOTS)
    ]


async def write_run(store: StepStore, run_id: str) -> None:
    await store.register_run(RunRegistration(run_id=run_id, conversation_id=f'conv-{run_id[:-2]}', token=run_id))
    planned = deltas(run_id)
    for start in range(0, SNAPSHOTS, BATCH):
        await store.save_snapshots(planned[start : start + BATCH])


def open_store(spec: str, schema: str | None) -> StepStore:
    if spec.startswith('postgresql://'):
        return PostgresStepStore(spec, schema=schema)
    return SqliteStepStore(spec)


async def main(args: argparse.Namespace) -> None:
    store = open_store(args.store, args.schema)
    await store.list_conversations()  # opens (and migrates) before `ready`
    print('ready', flush=True)
    numbers = itertools.count() if args.forever else iter(range(args.runs))
    try:
        while True:
            chunk = list(itertools.islice(numbers, args.tasks))
            if not chunk:
                return
            async with anyio.create_task_group() as group:
                for number in chunk:
                    group.start_soon(write_run, store, f'{args.prefix}-{number:04d}')
    finally:
        await store.aclose()


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('store')
    parser.add_argument('--schema')
    parser.add_argument('--prefix', required=True)
    parser.add_argument('--runs', type=int, default=20)
    parser.add_argument('--tasks', type=int, default=1)
    parser.add_argument('--forever', action='store_true')
    anyio.run(main, parser.parse_args(sys.argv[1:]))
