"""Inherited history by reference: a run's first snapshot names its base's log rows instead of copying them.

The rule every store follows: an inherited entry is a reference when the base run is in the same
conversation (deleting that conversation deletes both runs), and a copy of the body when it is not
(so deleting the base's conversation never breaks another). A reference names the row that holds
the body, never another reference, so a read follows at most one hop.
"""

from __future__ import annotations

import pytest

from durable_recall.base import _errors
from durable_recall.base._codec import dump_messages
from durable_recall.base._records import Segment, SnapshotDelta
from tests._services.stores import StoreKit

from ._helpers import delta, messages, registration, save_history
from ._log_rows import log_entries

pytestmark = pytest.mark.anyio


def based(run_id: str, base_run_id: str, base_index: int, segments: list[Segment], new: list[int]) -> SnapshotDelta:
    """A first delta that copies from another run's snapshot; its new messages are `messages(*new)`."""
    return SnapshotDelta(
        run_id=run_id,
        index=0,
        step_index=0,
        state='complete',
        segments=segments,
        messages=dump_messages(messages(*new)),
        base_run_id=base_run_id,
        base_index=base_index,
    )


def new_body(entry: tuple[str, str | None, int | None]) -> bool:
    """Whether a log entry holds a body of its own (text in memory, compressed in the SQL stores)."""
    return entry[0] in ('text', 'compressed') and entry[1:] == (None, None)


async def test_inherited_entries_are_references_to_the_base_rows(kit: StoreKit) -> None:
    store = kit.store
    for run_id in ('parent', 'child'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'parent', [messages(0, 1), messages(0, 1, 2, 3)])

    assert await store.save_snapshot(based('child', 'parent', 1, [(1, 3), (-1, 1), (0, 1)], [9]))

    entries = await log_entries(kit, 'child')
    assert [entries[0], entries[1], entries[3]] == [('ref', 'parent', 1), ('ref', 'parent', 2), ('ref', 'parent', 0)]
    assert new_body(entries[2])
    # The run's own numbering is unchanged: inherited entries occupy its log numbers too.
    [snapshot] = await store.list_snapshots('child')
    assert (snapshot.messages, snapshot.seqs) == (messages(1, 2, 9, 0), [0, 1, 2, 3])
    assert await store.latest_snapshot('child') == snapshot
    assert await store.read_messages('child', [3, 0, 2]) == {0: messages(1)[0], 2: messages(9)[0], 3: messages(0)[0]}
    assert await kit.log_size('child') == 4

    # Later snapshots copy from the child's own log, references and all.
    assert await store.save_snapshot(delta('child', 1, messages(1, 2, 9, 0), messages(2, 9, 0, 10)))
    latest = await store.latest_snapshot('child')
    assert latest is not None
    assert (latest.messages, latest.seqs) == (messages(2, 9, 0, 10), [1, 2, 3, 4])
    assert await kit.log_size('child') == 5


async def test_a_reference_names_the_row_with_the_body_not_another_reference(kit: StoreKit) -> None:
    store = kit.store
    for run_id in ('first', 'second', 'third'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'first', [messages(0, 1)])
    assert await store.save_snapshot(based('second', 'first', 0, [(0, 2), (-1, 1)], [2]))
    assert await store.save_snapshot(based('third', 'second', 0, [(0, 3), (-1, 1)], [3]))

    entries = await log_entries(kit, 'third')
    assert entries[:3] == [('ref', 'first', 0), ('ref', 'first', 1), ('ref', 'second', 2)]
    assert new_body(entries[3])
    assert [s.messages for s in await store.list_snapshots('third')] == [messages(0, 1, 2, 3)]
    assert await store.read_messages('third', [0, 2]) == {0: messages(0)[0], 2: messages(2)[0]}


async def test_runs_without_a_conversation_share_by_reference(kit: StoreKit) -> None:
    # No conversation is never deleted (`delete_conversation` names one), so references are safe.
    store = kit.store
    for run_id in ('parent', 'child'):
        await store.register_run(registration(run_id, conversation_id=None))
    await save_history(store, 'parent', [messages(0, 1)])
    assert await store.save_snapshot(based('child', 'parent', 0, [(0, 2)], []))

    assert await log_entries(kit, 'child') == [('ref', 'parent', 0), ('ref', 'parent', 1)]
    assert [s.messages for s in await store.list_snapshots('child')] == [messages(0, 1)]


async def test_a_base_in_another_conversation_is_copied_so_deleting_it_breaks_nothing(kit: StoreKit) -> None:
    store = kit.store
    for run_id in ('a', 'b'):
        await store.register_run(registration(run_id, conversation_id='old'))
    await store.register_run(registration('x', conversation_id='new'))
    await save_history(store, 'a', [messages(0, 1)])
    assert await store.save_snapshot(based('b', 'a', 0, [(0, 2), (-1, 1)], [2]))  # references to a
    # x builds on b, whose first entries are references: x gets the bodies they name.
    assert await store.save_snapshot(based('x', 'b', 0, [(0, 3), (-1, 1)], [3]))

    entries = await log_entries(kit, 'x')
    assert all(new_body(entry) for entry in entries), entries
    assert await store.delete_conversation('old') == 2

    [snapshot] = await store.list_snapshots('x')
    assert snapshot.messages == messages(0, 1, 2, 3)
    assert await store.read_messages('x', snapshot.seqs) == dict(enumerate(messages(0, 1, 2, 3)))
    assert await store.save_snapshot(delta('x', 1, messages(0, 1, 2, 3), messages(1, 2, 3, 4)))
    assert [s.messages for s in await store.list_snapshots('x')][-1] == messages(1, 2, 3, 4)


async def test_deleting_a_conversation_takes_its_references_and_nothing_else(kit: StoreKit) -> None:
    store = kit.store
    for run_id, conversation_id in [('a', 'c'), ('b', 'c'), ('y', 'd'), ('z', 'd')]:
        await store.register_run(registration(run_id, conversation_id=conversation_id))
    await save_history(store, 'a', [messages(0, 1)])
    assert await store.save_snapshot(based('b', 'a', 0, [(0, 2), (-1, 1)], [2]))
    await save_history(store, 'y', [messages(5, 6)])
    assert await store.save_snapshot(based('z', 'y', 0, [(0, 2), (-1, 1)], [7]))

    assert await store.delete_conversation('c') == 2

    for run_id in ('a', 'b'):
        assert await store.list_snapshots(run_id) == []
        assert await store.read_messages(run_id, [0, 1, 2]) == {}
    if kit.backend != 'memory':
        assert await kit.query("SELECT COUNT(*) FROM {messages} WHERE run_id IN ('a', 'b')") == [(0,)]
    assert [s.messages for s in await store.list_snapshots('z')] == [messages(5, 6, 7)]
    entries = await log_entries(kit, 'z')
    assert entries[:2] == [('ref', 'y', 0), ('ref', 'y', 1)]
    assert new_body(entries[2])


async def test_a_reference_to_a_missing_row_is_reported(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    for run_id in ('parent', 'child'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'parent', [messages(0, 1)])
    assert await store.save_snapshot(based('child', 'parent', 0, [(0, 2), (-1, 1)], [2]))
    await sql_kit.query("DELETE FROM {messages} WHERE run_id = 'parent' AND seq = 1")

    for read in (store.list_snapshots('child'), store.latest_snapshot('child')):
        with pytest.raises(_errors.CorruptSnapshotError, match='message 1 of the run log is missing') as caught:
            await read
        assert (caught.value.run_id, caught.value.index) == ('child', 0)
    with pytest.raises(_errors.CorruptSnapshotError, match='message 1 of the run log is missing') as caught:
        await store.read_messages('child', [0, 1])
    assert (caught.value.run_id, caught.value.index) == ('child', -1)
    assert await store.read_messages('child', [0, 2]) == {0: messages(0)[0], 2: messages(2)[0]}
