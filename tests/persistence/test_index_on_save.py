"""`StepPersistence` indexes what it saves, in the save's own durable operation, so searches find nothing pending.

A search that finds runs pending catches them up itself, inside the activity or step a turn
waits on. Indexed where the snapshots are written, the conversation's index is current when the
search comes. The index is derived data: a catch-up that fails there leaves the runs pending
for the next search, and never fails the save; a save sent again (a retry, a replay) indexes
nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence, update_index
from durable_recall.index import RunCommit
from durable_recall.search import SearchRequest
from durable_recall.stores import SnapshotDelta, StepStore
from tests.search._stub import context

pytestmark = pytest.mark.anyio


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(f'reply {len(messages)}')])


async def _chat(store: StepStore, **options: Any) -> None:
    agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store=store, **options)])
    history: list[ModelMessage] = []
    for word in ('ZEBRA', 'OKAPI', 'QUOKKA'):
        history = (
            await agent.run(f'we talk about {word}', message_history=history, conversation_id='c')
        ).all_messages()


async def test_a_saved_run_is_indexed_before_any_search(store: StepStore) -> None:
    await _chat(store)
    status = await store.index_storage().status('c', all_scopes=False)
    assert status.pending == []
    assert status.docs == 6  # three prompts and three replies, each indexed once (under the run that said it)
    answer = await ConversationSearch(SnapshotHistorySource(store), scope='conversation').search(
        context(conversation_id='c'), SearchRequest(query='OKAPI')
    )
    assert 'we talk about OKAPI' in answer


async def test_without_index_on_save_the_search_catches_up(store: StepStore) -> None:
    await _chat(store, index_on_save=False)
    assert len((await store.index_storage().status('c', all_scopes=False)).pending) == 3
    answer = await ConversationSearch(SnapshotHistorySource(store), scope='conversation').search(
        context(conversation_id='c'), SearchRequest(query='QUOKKA')
    )
    assert 'we talk about QUOKKA' in answer
    assert (await store.index_storage().status('c', all_scopes=False)).pending == []


async def test_a_save_sent_again_indexes_nothing_twice(store: StepStore) -> None:
    from durable_recall.persistence._index_on_save import index_saved

    await _chat(store)
    before = await store.index_storage().status('c', all_scopes=False)
    deltas = []
    for run in await store.list_runs(conversation_id='c'):
        last = (await store.list_snapshots(run.run_id))[-1]
        deltas.append(
            SnapshotDelta(run_id=run.run_id, index=last.index, step_index=0, state='complete', segments=[], messages=[])
        )
    await index_saved(store, deltas)  # a retried save's catch-up: nothing new
    await update_index(store, 'c')  # and a search's, after the writer's
    after = await store.index_storage().status('c', all_scopes=False)
    assert (after.docs, after.length, after.generation) == (before.docs, before.length, before.generation)


async def test_a_failed_catch_up_leaves_the_runs_pending_and_the_save_done(
    store: StepStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    storage_type = type(store.index_storage())

    async def failing(self: Any, changes: Sequence[RunCommit]) -> None:
        raise RuntimeError('the index is on fire')

    monkeypatch.setattr(storage_type, 'commit_many', failing)
    with caplog.at_level(logging.WARNING, logger='durable_recall.persistence'):
        await _chat(store)
    assert 'indexing the snapshots just saved failed (RuntimeError)' in caplog.text
    assert len(await store.list_runs(conversation_id='c')) == 3
    assert len((await store.index_storage().status('c', all_scopes=False)).pending) == 3
    monkeypatch.undo()
    answer = await ConversationSearch(SnapshotHistorySource(store), scope='conversation').search(
        context(conversation_id='c'), SearchRequest(query='ZEBRA')
    )
    assert 'we talk about ZEBRA' in answer


def test_index_on_save_must_be_a_bool(store: StepStore) -> None:
    with pytest.raises(TypeError, match="index_on_save must be True or False, got 'yes'"):
        StepPersistence(store=store, index_on_save='yes')  # pyright: ignore[reportArgumentType]
