"""SQLite files give the pages a write empties back to the file system (incremental auto-vacuum)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from durable_recall.conversations import SqliteConversationStore
from durable_recall.index import update_index
from durable_recall.stores import SqliteStepStore
from durable_recall.stores.sqlite._connection import reclaim_free_pages, transaction

from ._helpers import BASE, registration, save_history

pytestmark = pytest.mark.anyio


def pragma(path: Path, name: str) -> int:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        return conn.execute(f'PRAGMA {name}').fetchone()[0]


def checkpointed_pages(path: Path) -> int:
    """The file's pages once the WAL is written back (a truncation takes effect in the file then)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)').fetchall()
        return conn.execute('PRAGMA page_count').fetchone()[0]


def bulky(run: str, count: int) -> list[ModelMessage]:
    """`count` user prompts of distinct words: a few KB each, so their rows fill many pages."""
    texts = [f'{run} message {i} ' + ' '.join(f'w{run}{i}x{j}' for j in range(400)) for i in range(count)]
    return [ModelRequest(parts=[UserPromptPart(text, timestamp=BASE)], timestamp=BASE) for text in texts]


async def fill(store: SqliteStepStore, conversation_id: str, runs: int) -> None:
    for r in range(runs):
        run_id = f'{conversation_id}-run-{r}'
        await store.register_run(registration(run_id, conversation_id=conversation_id))
        await save_history(store, run_id, [bulky(run_id, 6)])
    await update_index(store, conversation_id)


async def test_a_new_file_is_in_incremental_auto_vacuum_mode(tmp_path: Path) -> None:
    step_path, conversation_path = tmp_path / 'steps.db', tmp_path / 'conversations.db'
    await SqliteStepStore(step_path).aclose()
    SqliteConversationStore(conversation_path)

    assert pragma(step_path, 'auto_vacuum') == 2  # INCREMENTAL
    assert pragma(conversation_path, 'auto_vacuum') == 2


async def test_deleting_a_conversation_gives_its_pages_back(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    await fill(store, 'kept', 2)
    with_kept = checkpointed_pages(path)
    await fill(store, 'gone', 6)
    with_both = checkpointed_pages(path)
    assert with_both > with_kept + 30

    assert await store.delete_conversation('gone') == 6

    assert pragma(path, 'freelist_count') == 0
    # Back to about what the kept conversation took (its index rows may sit on other pages now).
    assert checkpointed_pages(path) <= with_kept + 4
    runs = await store.list_runs(conversation_id='kept')
    assert len(runs) == 2
    snapshot = await store.latest_snapshot(runs[0].run_id)
    assert snapshot is not None and snapshot.messages == bulky(runs[0].run_id, 6)
    await store.aclose()


async def test_a_file_in_another_mode_keeps_its_free_pages_and_works(tmp_path: Path) -> None:
    path = tmp_path / 'store.db'
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute('PRAGMA auto_vacuum = NONE')
        conn.execute('CREATE TABLE made_by_hand (x)')  # fixes the mode, as an earlier release's file has it
    store = SqliteStepStore(path)
    await fill(store, 'c', 3)
    await store.delete_conversation('c')

    assert pragma(path, 'auto_vacuum') == 0
    assert pragma(path, 'freelist_count') > 30  # SQLite keeps them, for later writes to reuse
    await fill(store, 'd', 1)
    assert len(await store.list_runs(conversation_id='d')) == 1
    await store.aclose()


def test_reclaiming_moves_every_free_page_in_the_write(tmp_path: Path) -> None:
    path = tmp_path / 'plain.db'
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute('PRAGMA auto_vacuum = INCREMENTAL')
        conn.execute('CREATE TABLE t (x BLOB)')
        conn.executemany('INSERT INTO t VALUES (?)', [(bytes(3000),) for _ in range(50)])
        before = conn.execute('PRAGMA page_count').fetchone()[0]
        with transaction(conn, 'BEGIN'):  # a read transaction reclaims nothing
            conn.execute('DELETE FROM t WHERE rowid > 10')
        freed = conn.execute('PRAGMA freelist_count').fetchone()[0]
        assert freed >= 35

        with transaction(conn, 'BEGIN IMMEDIATE'):
            conn.execute('DELETE FROM t WHERE rowid > 5')
        assert conn.execute('PRAGMA freelist_count').fetchone()[0] == 0
        assert conn.execute('PRAGMA page_count').fetchone()[0] <= before - freed - 4
        assert reclaim_free_pages(conn) == 0
        assert conn.execute('SELECT COUNT(*) FROM t').fetchone()[0] == 5
