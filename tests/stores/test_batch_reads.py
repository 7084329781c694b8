"""Batched reads for what a search answer shows: several runs' records, and several runs' log entries."""

from __future__ import annotations

import pytest

from durable_recall.base import load_messages
from durable_recall.stores import LogBodies, StepStore

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


async def test_get_runs_returns_the_registered_ones(store: StepStore) -> None:
    for run_id in ('a', 'b', 'c'):
        await store.register_run(registration(run_id))

    found = await store.get_runs(['c', 'a', 'missing', 'a'])

    assert found == {'a': await store.get_run('a'), 'c': await store.get_run('c')}
    assert await store.get_runs([]) == {}


async def test_read_logs_reads_several_runs_as_read_messages_does(store: StepStore) -> None:
    await store.register_run(registration('a', conversation_id='c'))
    await save_history(store, 'a', [messages(0, 1), messages(0, 1, 2, 3)])
    # `b` inherits `a`'s history: its first entries are references, followed on read.
    await store.register_run(registration('b', conversation_id='c'))
    await save_history(store, 'b', [messages(0, 1, 2, 3, 4)])
    await store.register_run(registration('empty', conversation_id='c'))

    found = await store.read_logs({'a': [3, 0, 3, 99], 'b': [0, 4], 'empty': [0], 'missing': [1], 'none': []})

    assert found == {
        'a': await store.read_messages('a', [0, 3]),
        'b': await store.read_messages('b', [0, 4]),
    }
    assert list(found['a']) == [0, 3]
    assert await store.read_logs({}) == {}


async def test_read_log_bodies_is_read_logs_as_json_text(store: StepStore) -> None:
    """What a search answer renders from: the same entries as `read_logs`, as the JSON text that decodes to them."""
    assert isinstance(store, LogBodies)
    await store.register_run(registration('a', conversation_id='c'))
    await save_history(store, 'a', [messages(0, 1), messages(0, 1, 2, 3)])
    await store.register_run(registration('b', conversation_id='c'))
    await save_history(store, 'b', [messages(0, 1, 2, 3, 4)])

    wanted = {'a': [3, 0, 3, 99], 'b': [0, 4], 'missing': [1], 'none': []}
    bodies = await store.read_log_bodies(wanted)
    decoded = await store.read_logs(wanted)

    assert {run_id: list(log) for run_id, log in bodies.items()} == {'a': [0, 3], 'b': [0, 4]}
    for run_id, log in bodies.items():
        assert dict(zip(log, load_messages(list(log.values())), strict=True)) == decoded[run_id]
    assert await store.read_log_bodies({}) == {}
