"""Two processes (tasks, then OS processes) catching up one conversation index it once, on SQLite and Postgres.

The persistent search index of our SQL conversation stores, caught up from the entry log, never
rebuilt per search; its answers must equal the in-memory path's (see `_index_kit`).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from durable_recall.conversations import ConversationStoreSource
from durable_recall.search import SearchRequest

from ._index_kit import QUERIES, InMemory, Kit, Store, answers, chat, engine, same_as_in_memory, scope_docs
from .conftest import ConversationKit

pytestmark = pytest.mark.anyio

_ROOT = Path(__file__).resolve().parents[2]


async def test_two_processes_catching_up_one_conversation_index_it_once(index_kit: Kit) -> None:
    kit = index_kit
    rng = random.Random(3)
    writer = kit.open()
    await chat(writer, 'shared', 30, rng)
    first, second = kit.open(), kit.open()
    results: dict[int, list[str]] = {}

    async def search(n: int, store: Store) -> None:
        results[n] = await answers(engine(ConversationStoreSource(store)), ['shared'], all_scopes=False)

    async with anyio.create_task_group() as group:
        group.start_soon(search, 1, first)
        group.start_soon(search, 2, second)
    expected = await same_as_in_memory(kit.open(), ['shared'], all_scopes=False)
    assert results[1] == results[2] == expected
    docs = await scope_docs(kit, 'shared')
    assert docs == 60  # every message once: an indexing race that doubled postings would count them twice

    # Again with appends landing while both catch up.
    async def save_more() -> None:
        await chat(writer, 'shared', 5, rng)

    async with anyio.create_task_group() as group:
        group.start_soon(save_more)
        group.start_soon(search, 1, first)
        group.start_soon(search, 2, second)
    final = await same_as_in_memory(kit.open(), ['shared'], all_scopes=False)
    assert await answers(engine(ConversationStoreSource(first)), ['shared'], all_scopes=False) == final
    assert await scope_docs(kit, 'shared') == 70


def _search_in_processes(kit: ConversationKit, tmp_path: Path, cid: str, go: Path) -> list[subprocess.Popen[str]]:
    location = str(kit.sqlite_path) if kit.sqlite_path is not None else str(kit.postgres_url)
    command = [sys.executable, '-m', 'tests.conversations._search_worker', kit.backend, location]
    command += [kit.postgres_schema or '-', cid, str(go), *QUERIES]
    workers = [subprocess.Popen(command, cwd=_ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == 'ready'
    return workers


async def test_two_os_processes_catching_up_one_conversation(
    sql_conversation_kit: ConversationKit, tmp_path: Path
) -> None:
    kit = sql_conversation_kit
    await chat(kit.store, 'shared', 40, random.Random(13))
    go = tmp_path / 'go'
    workers = _search_in_processes(kit, tmp_path, 'shared', go)
    try:
        go.touch()  # both cold, both find the conversation unindexed, both catch it up
        outputs = [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0]
    in_memory = engine(InMemory(ConversationStoreSource(kit.store)))
    expected = [
        await in_memory.search(SearchRequest(query=query), scope='conversation', conversation_id='shared')
        for query in QUERIES
    ]
    assert outputs[0] == outputs[1] == expected
    indexed = await kit.query("SELECT docs FROM {index_scopes} WHERE conversation_id = 'shared'")
    assert indexed == [(80,)]  # every message once
    assert await kit.query('SELECT COUNT(*) FROM {index_runs}') == [(1,)]
    assert await kit.query('SELECT COUNT(*) FROM {pending}') == [(0,)]
