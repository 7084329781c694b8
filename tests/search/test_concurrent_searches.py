"""Searches of different conversations in one process overlap; searches of one conversation take turns.

A worker runs many conversations' turns at once. Over a store's own index each conversation's
searches have a ranker and lock of their own (`search._rankers`), so one conversation's search
never waits out another's round trips to the store. Checked without timing: the first search
blocks inside its index read until the second one has reached its own; if the second waited for
the first, every task would block, which `wait_all_tasks_blocked` detects.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from durable_recall import ConversationSearch, InMemoryStepStore, SnapshotHistorySource
from durable_recall.search import SearchRequest
from tests.stores._helpers import messages, registration, save_history

from ._stub import context

pytestmark = pytest.mark.anyio


async def _store() -> InMemoryStepStore:
    store = InMemoryStepStore()
    for conversation_id in ('a', 'b'):
        await store.register_run(registration(f'run-{conversation_id}', conversation_id=conversation_id))
        await save_history(store, f'run-{conversation_id}', [messages(0, 1)])
    return store


async def _first_waits_for_second(
    tool: ConversationSearch, store: InMemoryStepStore, monkeypatch: Any, second: str
) -> bool:
    """Whether the second search reached the index while the first was inside its own read."""
    storage_type = type(store.index_storage())
    real = storage_type.status
    reached = anyio.Event()
    waiting = anyio.Event()

    async def status(self: Any, conversation_id: str | None, *, all_scopes: bool) -> Any:
        if conversation_id == 'a' and not waiting.is_set():
            waiting.set()
            await reached.wait()
        elif waiting.is_set():
            reached.set()
        return await real(self, conversation_id, all_scopes=all_scopes)

    monkeypatch.setattr(storage_type, 'status', status)
    overlapped = True
    async with anyio.create_task_group() as group:
        group.start_soon(tool.search, context(conversation_id='a'), SearchRequest(query='question'))
        await waiting.wait()
        group.start_soon(tool.search, context(conversation_id=second), SearchRequest(query='answer'))
        await anyio.wait_all_tasks_blocked()
        if not reached.is_set():
            overlapped = False
            reached.set()  # let the first one finish
    return overlapped


async def test_searches_of_two_conversations_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    store = await _store()
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    assert await _first_waits_for_second(tool, store, monkeypatch, 'b')


async def test_searches_of_one_conversation_take_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    store = await _store()
    tool = ConversationSearch(SnapshotHistorySource(store), scope='conversation')
    assert not await _first_waits_for_second(tool, store, monkeypatch, 'a')
