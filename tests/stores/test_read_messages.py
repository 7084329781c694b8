"""`read_messages`: a run's messages by log number, aligned with its snapshots, damage named."""

from __future__ import annotations

import pytest

from durable_recall.base import _errors
from durable_recall.stores import StepStore
from tests._services.stores import StoreKit

from ._helpers import messages, registration, save_history

pytestmark = pytest.mark.anyio


class TestMessages:
    async def test_read_messages_by_log_number(self, store: StepStore) -> None:
        await store.register_run(registration('run-1'))
        await save_history(store, 'run-1', [messages(0, 1), messages(0, 1, 2, 3)])
        latest = await store.latest_snapshot('run-1')
        assert latest is not None

        found = await store.read_messages('run-1', [3, 1, 99, -1, 1])

        assert found == {1: latest.messages[1], 3: latest.messages[3]}
        assert list(found) == [1, 3]
        assert await store.read_messages('run-1', []) == {}
        assert await store.read_messages('no-such-run', [0]) == {}

    async def test_snapshot_seqs_stay_aligned_through_a_compaction(self, store: StepStore) -> None:
        await store.register_run(registration('run-1'))
        history = [messages(0, 1, 2, 3, 4, 5), messages(0, 4, 5), messages(0, 4, 5, 6)]
        await save_history(store, 'run-1', history)

        snapshots = await store.list_snapshots('run-1')
        latest = await store.latest_snapshot('run-1')

        assert [snapshot.seqs for snapshot in snapshots] == [[0, 1, 2, 3, 4, 5], [0, 4, 5], [0, 4, 5, 6]]
        assert latest is not None and latest.seqs == snapshots[-1].seqs
        for snapshot in snapshots:
            found = await store.read_messages('run-1', snapshot.seqs)
            assert [found[seq] for seq in snapshot.seqs] == snapshot.messages

    async def test_a_body_that_does_not_decode_raises_corrupt(self, sql_kit: StoreKit) -> None:
        await sql_kit.store.register_run(registration('run-1'))
        await save_history(sql_kit.store, 'run-1', [messages(0, 1)])
        await sql_kit.query("UPDATE {messages} SET body = 'garbage' WHERE {of_run} AND seq = 1", 'run-1')

        assert await sql_kit.store.read_messages('run-1', [0]) == {0: messages(0)[0]}
        with pytest.raises(_errors.CorruptSnapshotError) as caught:
            await sql_kit.store.read_messages('run-1', [0, 1])
        assert (caught.value.run_id, caught.value.index) == ('run-1', -1)
