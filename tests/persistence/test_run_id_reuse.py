"""A reused run id is refused with `RunIdConflictError`; a replay of the same content stays a no-op."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest

from durable_recall import StepPersistence, StepStore
from durable_recall.base import dump_messages, load_messages
from durable_recall.errors import RunIdConflictError
from durable_recall.persistence._replayed import check_replayed
from durable_recall.stores import PersistBatch
from tests._scripted import scripted_model

pytestmark = pytest.mark.anyio


def build(store: StepStore, *, fail_reads: bool = False) -> Agent[None, str]:
    agent = Agent(scripted_model(), name='support', capabilities=[StepPersistence(store)])

    @agent.tool_plain
    def read_file(path: str) -> str:
        if fail_reads:
            raise RuntimeError(f'disk on fire while reading {path}')
        return f'# contents of {path}\nVALUE = {len(path)}'

    return agent


async def stored(store: StepStore, run_id: str) -> list[tuple[int, list[str]]]:
    """Each snapshot's index and message kinds with their text, to compare a store before and after."""
    return [
        (snapshot.index, [repr(message.parts) for message in snapshot.messages])
        for snapshot in await store.list_snapshots(run_id, include_interrupted=True)
    ]


async def test_a_second_run_under_the_same_run_id_is_refused(store: StepStore) -> None:
    agent = build(store)
    await agent.run('read the config', run_id='nightly', conversation_id='c')
    before = await stored(store, 'nightly')
    with pytest.raises(RunIdConflictError, match="snapshot 0 of run 'nightly' is already stored with other content"):
        await agent.run('something else entirely', run_id='nightly', conversation_id='c')
    assert await stored(store, 'nightly') == before, 'the first run is untouched'


async def test_a_retry_after_a_failure_under_the_old_run_id_is_refused_not_mixed(store: StepStore) -> None:
    with pytest.raises(RuntimeError, match='disk on fire'):
        await build(store, fail_reads=True).run('read the config', run_id='retry-me', conversation_id='c')
    failed = await stored(store, 'retry-me')
    assert len(failed) == 2  # the prompt, then the unanswered call the failure interrupted
    with pytest.raises(RunIdConflictError, match="run 'retry-me' is already stored with other content") as raised:
        await build(store).run('read the config', run_id='retry-me', conversation_id='c')
    assert raised.value.run_id == 'retry-me'
    assert await stored(store, 'retry-me') == failed, 'nothing of the retry is mixed into the failed attempt'


async def test_a_re_execution_that_restamps_the_requests_is_a_no_op(
    store: StepStore, batches: list[PersistBatch]
) -> None:
    # A durable engine re-executing workflow code builds the request parts again, with new
    # timestamps: the same steps, the same content.
    await build(store).run('read the config', run_id='again', conversation_id='c')
    before = await stored(store, 'again')
    later = datetime(2030, 1, 1, tzinfo=UTC)
    for batch in batches:
        restamped = [replace(delta, messages=dump_messages(restamp(delta.messages, later))) for delta in batch.deltas]
        assert not any(await store.save_snapshots(restamped))
        await check_replayed(store, restamped)
    assert await stored(store, 'again') == before


def restamp(bodies: list[str], moment: datetime) -> list[ModelMessage]:
    messages = load_messages(bodies)
    for message in messages:
        if isinstance(message, ModelRequest):
            message.timestamp = moment
            for part in message.parts:
                if hasattr(part, 'timestamp'):
                    part.timestamp = moment  # pyright: ignore[reportAttributeAccessIssue]
    return messages


async def test_a_retried_batch_is_a_no_op(store: StepStore, batches: list[PersistBatch]) -> None:
    await build(store).run('read the config', run_id='batched', conversation_id='c')
    before = await stored(store, 'batched')
    for batch in batches:  # an activity retry sends the very same batches again
        assert not any(await store.save_snapshots(batch.deltas))
        await check_replayed(store, batch.deltas)
    assert await stored(store, 'batched') == before


async def test_a_batch_with_other_content_at_a_stored_index_is_refused(
    store: StepStore, batches: list[PersistBatch]
) -> None:
    await build(store).run('read the config', run_id='first', conversation_id='c')
    await build(store).run('read the notes', run_id='second', conversation_id='c')
    first = [delta for batch in batches for delta in batch.deltas if delta.run_id == 'first']
    second = [delta for batch in batches for delta in batch.deltas if delta.run_id == 'second']
    forged = [replace(delta, run_id='first') for delta in second[:1]]
    assert await store.save_snapshots(forged) == [False]
    with pytest.raises(RunIdConflictError, match="snapshot 0 of run 'first'"):
        await check_replayed(store, forged)
    await check_replayed(store, first[:1])
