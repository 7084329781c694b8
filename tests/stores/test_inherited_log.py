"""Inherited history by reference: a run's first snapshot names its base's log entries instead of copying them.

The rule every store follows: an inherited entry is a reference when the base run is in the same
conversation (deleting that conversation deletes both runs), and a copy of the body when it is not
(so deleting the base's conversation never breaks another). The SQL stores keep references as
ranges of the base run's entries, which may be references themselves: a read follows them, never
more than `MAX_HOPS` deep (`durable_recall.stores._log_refs`). `log_entries` shows each reference
by the row holding its body, whatever the path to it.
"""

from __future__ import annotations

from typing import Any

import pytest

from durable_recall.base import _errors
from durable_recall.base._codec import dump_messages
from durable_recall.base._records import Segment, SnapshotDelta
from durable_recall.index._reader import SharingReader
from durable_recall.stores._log_refs import MAX_HOPS
from tests._services.stores import StoreKit

from ._helpers import delta, message, messages, registration, save_history
from ._log_rows import LogReader, log_entries, owner, ref_ranges

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


async def test_a_reference_may_name_a_reference_and_reads_follow_it(kit: StoreKit) -> None:
    store = kit.store
    for run_id in ('first', 'second', 'third'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'first', [messages(0, 1)])
    assert await store.save_snapshot(based('second', 'first', 0, [(0, 2), (-1, 1)], [2]))
    assert await store.save_snapshot(based('third', 'second', 0, [(0, 3), (-1, 1)], [3]))

    entries = await log_entries(kit, 'third')
    assert entries[:3] == [('ref', 'first', 0), ('ref', 'first', 1), ('ref', 'second', 2)]
    assert new_body(entries[3])
    if kit.backend != 'memory':
        # One range of the second run's entries, though two of them are references to the first run.
        assert await ref_ranges(kit, 'third') == [(0, 3, 'second', 0)]
        assert await owner(kit, 'third', 0) == ('first', 0, 2)
    assert [s.messages for s in await store.list_snapshots('third')] == [messages(0, 1, 2, 3)]
    assert await store.read_messages('third', [0, 2]) == {0: messages(0)[0], 2: messages(2)[0]}
    assert await store.read_logs({'third': [1, 3], 'second': [0]}) == {
        'third': {1: messages(1)[0], 3: messages(3)[0]},
        'second': {0: messages(0)[0]},
    }


async def test_a_chat_run_inherits_its_window_in_one_range(kit: StoreKit) -> None:
    # A run per exchange: each inherits the last messages of the one before (a window), behind a
    # fresh marker, then adds a prompt and an answer. The window's bodies belong to several runs.
    store = kit.store
    window, runs = 7, MAX_HOPS + 4
    history: list[int] = []
    for k in range(runs):
        run_id = f'run-{k:02d}'
        await store.register_run(registration(run_id, conversation_id='chat'))
        marker, prompt, answer = 1000 + k, 2000 + k, 3000 + k
        if k == 0:
            await save_history(store, run_id, [messages(marker, prompt), messages(marker, prompt, answer)])
        else:
            size, start = len(history), max(0, len(history) - window)
            first = based(run_id, f'run-{k - 1:02d}', 1, [(-1, 1), (start, size), (-1, 1)], [marker, prompt])
            assert await store.save_snapshot(first)
            kept = history[start:]
            assert await store.save_snapshot(
                delta(run_id, 1, messages(marker, *kept, prompt), messages(marker, *kept, prompt, answer))
            )
        history = [marker, *history[max(0, len(history) - window) :], prompt, answer]
        if kit.backend != 'memory':
            assert len(await ref_ranges(kit, run_id)) == (1 if k else 0)

    for k in range(runs):
        run_id = f'run-{k:02d}'
        snapshots = await store.list_snapshots(run_id)
        assert await store.latest_snapshot(run_id) == snapshots[-1]
        assert await store.read_messages(run_id, snapshots[-1].seqs) == dict(
            zip(snapshots[-1].seqs, snapshots[-1].messages, strict=True)
        )
    latest = await store.latest_snapshot(f'run-{runs - 1:02d}')
    assert latest is not None and latest.messages == messages(*history)


async def test_a_history_inherited_whole_is_never_more_than_max_hops_deep(kit: StoreKit) -> None:
    # Without compaction every run inherits everything: chaining range after range would make the
    # first messages deeper with every run, so every `MAX_HOPS` runs a run names their owners.
    store = kit.store
    runs = 2 * MAX_HOPS + 3
    history: list[int] = []
    for k in range(runs):
        run_id = f'run-{k:02d}'
        await store.register_run(registration(run_id, conversation_id='c'))
        if k == 0:
            await save_history(store, run_id, [messages(0), messages(0, 1)])
        else:
            first = based(run_id, f'run-{k - 1:02d}', 1, [(0, len(history)), (-1, 1)], [2 * k])
            assert await store.save_snapshot(first)
            assert await store.save_snapshot(
                delta(run_id, 1, messages(*history, 2 * k), messages(*history, 2 * k, 2 * k + 1))
            )
        history = list(range(2 * k + 2))

    chained = 0
    rows = LogReader(kit)  # every run's rows read once: the look-ups below follow the same chains
    for k in range(runs):
        run_id = f'run-{k:02d}'
        [*_, latest] = await store.list_snapshots(run_id)
        assert latest.messages == messages(*range(2 * k + 2))
        assert await store.read_messages(run_id, [0, 2 * k + 1]) == {0: message(0), 2 * k + 1: message(2 * k + 1)}
        if kit.backend != 'memory' and k:
            depths = [found[2] for seq in range(2 * k) if (found := await rows.owner(run_id, seq)) is not None]
            assert len(depths) == 2 * k and max(depths) <= MAX_HOPS
            chained += len(await rows.ref_ranges(run_id)) == 1
    if kit.backend != 'memory':
        assert chained >= runs - 1 - runs // MAX_HOPS


async def test_a_copy_across_conversations_follows_every_reference(kit: StoreKit) -> None:
    store = kit.store
    for run_id in ('a', 'b', 'c'):
        await store.register_run(registration(run_id, conversation_id='old'))
    await store.register_run(registration('x', conversation_id='new'))
    await save_history(store, 'a', [messages(0, 1)])
    assert await store.save_snapshot(based('b', 'a', 0, [(0, 2), (-1, 1)], [2]))
    assert await store.save_snapshot(based('c', 'b', 0, [(1, 3), (-1, 1)], [3]))
    assert await store.save_snapshot(based('x', 'c', 0, [(-1, 1), (0, 3)], [4]))

    assert all(new_body(entry) for entry in await log_entries(kit, 'x'))
    assert await store.delete_conversation('old') == 3
    if kit.backend != 'memory':
        counts = [await kit.query('SELECT COUNT(*) FROM {message_refs} WHERE {of_run}', run) for run in 'abc']
        assert counts == [[(0,)]] * 3
    [snapshot] = await store.list_snapshots('x')
    assert snapshot.messages == messages(4, 1, 2, 3)


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
        assert await kit.query('SELECT COUNT(*) FROM {messages}') == [(3,)]  # y's 5 and 6, z's 7: a's and b's are gone
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
    await sql_kit.query('DELETE FROM {messages} WHERE {of_run} AND seq = 1', 'parent')

    for read in (store.list_snapshots('child'), store.latest_snapshot('child')):
        with pytest.raises(_errors.CorruptSnapshotError, match='message 1 of the run log is missing') as caught:
            await read
        assert (caught.value.run_id, caught.value.index) == ('child', 0)
    with pytest.raises(_errors.CorruptSnapshotError, match='message 1 of the run log is missing') as caught:
        await store.read_messages('child', [0, 1])
    assert (caught.value.run_id, caught.value.index) == ('child', -1)
    assert await store.read_messages('child', [0, 2]) == {0: messages(0)[0], 2: messages(2)[0]}


async def test_a_body_missing_at_the_end_of_a_chain_is_reported(sql_kit: StoreKit) -> None:
    store = sql_kit.store
    for run_id in ('first', 'second', 'third'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'first', [messages(0, 1)])
    assert await store.save_snapshot(based('second', 'first', 0, [(0, 2), (-1, 1)], [2]))
    assert await store.save_snapshot(based('third', 'second', 0, [(0, 3), (-1, 1)], [3]))
    await sql_kit.query('DELETE FROM {messages} WHERE {of_run} AND seq = 1', 'first')

    with pytest.raises(_errors.CorruptSnapshotError, match='message 1 of the run log is missing') as caught:
        await store.latest_snapshot('third')
    assert (caught.value.run_id, caught.value.index) == ('third', 0)
    assert await store.read_logs({'third': [0, 2, 3]}) == {'third': {0: message(0), 2: message(2), 3: message(3)}}
    with pytest.raises(_errors.CorruptSnapshotError, match='message 1 of the run log is missing'):
        await store.read_logs({'third': [1]})
    # A later run building on the broken snapshot is refused rather than left with a hole.
    await store.register_run(registration('fourth', conversation_id='c'))
    with pytest.raises(_errors.CorruptSnapshotError, match='message 1 of the run log is missing'):
        await store.save_snapshot(based('fourth', 'third', 0, [(0, 4)], []))


async def test_snapshots_carry_their_stored_bodies_shared_with_the_base(kit: StoreKit) -> None:
    """`Snapshot.bodies` is aligned with the messages, and an inherited message has its base run's body."""
    store = kit.store
    for run_id in ('parent', 'child'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'parent', [messages(0, 1), messages(0, 1, 2, 3)])
    assert await store.save_snapshot(based('child', 'parent', 1, [(1, 3), (-1, 1), (0, 1)], [9]))

    [_, parent] = await store.list_snapshots('parent')
    [child] = await store.list_snapshots('child')
    assert len(parent.bodies) == len(parent.messages) and len(child.bodies) == len(child.messages)
    assert [child.bodies[0], child.bodies[1], child.bodies[3]] == [parent.bodies[1], parent.bodies[2], parent.bodies[0]]
    assert child.bodies[2] not in parent.bodies


async def test_a_sharing_listing_decodes_an_inherited_entry_once(sql_kit: StoreKit) -> None:
    # The index's catch-up reads run after run through one cache of messages by stored body: the
    # window a run inherited comes back as the very messages decoded for the earlier run.
    store = sql_kit.store
    for run_id in ('parent', 'child'):
        await store.register_run(registration(run_id, conversation_id='c'))
    await save_history(store, 'parent', [messages(0, 1), messages(0, 1, 2, 3)])
    assert await store.save_snapshot(based('child', 'parent', 1, [(1, 3), (-1, 1)], [9]))
    shared: dict[object, Any] = {}
    assert isinstance(store, SharingReader)
    list_sharing = store.list_snapshots_sharing

    parent = await list_sharing('parent', after=-1, shared=shared)
    child = await list_sharing('child', after=-1, shared=shared)

    assert parent == await store.list_snapshots('parent', include_interrupted=True)
    assert child == await store.list_snapshots('child', include_interrupted=True)
    assert child[0].messages == messages(1, 2, 9)
    assert child[0].messages[0] is parent[1].messages[1] and child[0].messages[1] is parent[1].messages[2]
    assert len(shared) == 5  # bodies 0..3 of the parent, 9 of the child: each decoded once
    assert await list_sharing('child', after=0, shared=shared) == []
