"""The reference's worked examples (behaviour.md §7.3) and the compaction shapes it got wrong.

Each case is folded by a `RecordBuilder` and, through an `InMemoryStepStore`, by a
`SnapshotHistorySource`; both must give the expected record, compared by content hash.

Where ours differs from the reference (0.62.0):

* C: the reference only looks for a suffix of the record that starts the snapshot, finds none and
  appends the whole snapshot again (`u1 r1 u2 r2 u1 u3`). We align the snapshot with the previous
  one, so `u1` is the kept head and only `u3` is new: `u1 r1 u2 r2 u3`.
* E: unchanged (`u1 r1 q a u3`) when nothing says more was dropped: `[q, a, u3]` is, by content,
  just as well the old `q a` with the prefix dropped. With our `SlidingWindowCompaction` marker at
  the head (it counts what was dropped), the repeat is exact: `u1 r1 q a q a u3`.
* G: an in-place edit that keeps the message's identity (here its creation timestamp) is the same
  message, so the original stays and nothing is appended: `u1 r1` (reference: `u1 r1 u1 r1-edited`).
  A re-created message with nothing of the original's identity cannot be told from a new one and is
  appended (`u1 r1 r1-edited`); duplication is the safe failure, never loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pytest
from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest, TextPart, UserPromptPart

from durable_recall import InMemoryStepStore
from durable_recall.compaction import SlidingWindowCompaction
from durable_recall.history import RecordBuilder, strip_artifacts
from durable_recall.search import SnapshotHistorySource
from tests.stores._helpers import delta, registration

from ._messages import (
    call,
    cleared,
    hashes,
    legacy_summary,
    rebuild,
    receipt,
    recorded,
    reply,
    restamped,
    same_messages,
    summary,
    summary_part,
    tick,
    tool_return,
    user,
    with_delta,
)

pytestmark = pytest.mark.anyio

Snapshots = list[list[ModelMessage]]


@dataclass
class Case:
    snapshots: Snapshots
    expected: list[ModelMessage]


def example_a() -> Case:
    u1, r1, u2, r2 = user('u1'), reply('r1'), user('u2'), reply('r2')
    return Case([[u1], [u1, r1, u2], [u1, r1, u2, r2]], [u1, r1, u2, r2])


def example_b() -> Case:
    u1, r1, u2, r2, u3 = user('u1'), reply('r1'), user('u2'), reply('r2'), user('u3')
    return Case([[u1, r1, u2, r2], [legacy_summary(), u2, r2, u3]], [u1, r1, u2, r2, recorded(), u3])


def example_b2() -> Case:
    u1, r1, u2, r2, u3 = user('u1'), reply('r1'), user('u2'), reply('r2'), user('u3')
    return Case([[u1, r1, u2, r2], [summary(), u2, r2, u3]], [u1, r1, u2, r2, recorded(), u3])


def example_b3() -> Case:
    u1, r1, r2 = user('u1'), reply('r1'), reply('r2')
    prompt = UserPromptPart('u2', timestamp=tick())
    return Case(
        [[u1, r1], [ModelRequest(parts=[summary_part(), prompt]), r2]], [u1, r1, recorded(), ModelRequest([prompt]), r2]
    )


def example_b4() -> Case:
    mine = ModelRequest(parts=[CompactionPart(content='mine')])
    u1 = user('u1')
    return Case([[mine, u1]], [mine, u1])


def app_summary_in_place() -> Case:
    """An application's own summary (a request of plain `CompactionPart`s) replaces the head: recorded once."""
    u1, r1, u2, r2, u3 = user('u1'), reply('r1'), user('u2'), reply('r2'), user('u3')
    mine = ModelRequest(parts=[CompactionPart(content='what u1 and r1 said')])
    return Case([[u1, r1, u2, r2], [mine, u2, r2, u3], [mine, u2, r2, u3, r1]], [u1, r1, u2, r2, mine, u3, r1])


def example_c() -> Case:
    u1, r1, u2, r2, u3 = user('u1'), reply('r1'), user('u2'), reply('r2'), user('u3')
    return Case([[u1, r1, u2, r2], [u1, u3]], [u1, r1, u2, r2, u3])


def example_d() -> Case:
    x, r1 = user('x'), reply('r1')
    return Case([[x], [x, x, r1]], [x, x, r1])


def example_e() -> Case:
    u1, r1, q, a, u3 = user('u1'), reply('r1'), user('q'), reply('a'), user('u3')
    return Case([[u1, r1, q, a], [user('q'), reply('a'), u3]], [u1, r1, q, a, u3])


def example_e_with_our_marker() -> Case:
    u1, r1, q, a, u3 = user('u1'), reply('r1'), user('q'), reply('a'), user('u3')
    q2, a2 = user('q'), reply('a')
    window = SlidingWindowCompaction(max_messages=4, keep_messages=3, preserve_first_user_message=False)
    compacted = window.compact([u1, r1, q, a, q2, a2])
    assert compacted is not None and len(compacted) == 3  # the marker (4 dropped), q2, a2
    return Case([[u1, r1, q, a], [*compacted, u3]], [u1, r1, q, a, q2, a2, u3])


def example_e2() -> Case:
    u1, r1, q, a, u3 = user('u1'), reply('r1'), user('q'), reply('a'), user('u3')
    q2, a2 = user('q'), reply('a')
    return Case([[u1, r1, q, a], [u1, r1, q, a, q2, a2, u3]], [u1, r1, q, a, q2, a2, u3])


def example_g() -> Case:
    u1, r1 = user('u1'), reply('r1')
    edited = replace(r1, parts=[TextPart('r1, edited')])
    return Case([[u1, r1], [u1, edited]], [u1, r1])


def example_g_recreated() -> Case:
    u1, r1 = user('u1'), reply('r1')
    recreated = reply('r1, edited')
    return Case([[u1, r1], [u1, recreated]], [u1, r1, recreated])


def example_h() -> Case:
    u1 = user('u1')
    return Case([[], [u1]], [u1])


def example_p() -> Case:
    r, u = reply('r'), user('u')
    return Case([[legacy_summary(), r, u]], [recorded(), r, u])


def head_kept_middle_dropped() -> Case:
    u1, c1, t1, c2, t2, c3, t3, c4, t4 = user('task'), *tool_cycle(1), *tool_cycle(2), *tool_cycle(3), *tool_cycle(4)
    return Case(
        [[u1, c1, t1], [u1, c1, t1, c2, t2], [u1, c2, t2, c3, t3], [u1, c3, t3, c4, t4]],
        [u1, c1, t1, c2, t2, c3, t3, c4, t4],
    )


def summary_at_head_then_kept_tail() -> Case:
    u1, c1, t1, c2, t2, c3, t3 = user('task'), *tool_cycle(1), *tool_cycle(2), *tool_cycle(3)
    final = reply('done')
    return Case(
        [[u1, c1, t1, c2, t2], [u1, summary(), c2, t2, c3, t3], [u1, summary('newer'), c3, t3, final]],
        [u1, c1, t1, c2, t2, recorded(), c3, t3, recorded('newer'), final],
    )


def tool_results_cleared_in_place() -> Case:
    u1, c1, t1, c2, t2, c3, t3 = user('task'), *tool_cycle(1), *tool_cycle(2), *tool_cycle(3)
    return Case(
        [[u1, c1, t1, c2, t2], [u1, c1, cleared(t1), c2, t2, c3, t3], [u1, c1, cleared(t1), c2, cleared(t2), c3, t3]],
        [u1, c1, t1, c2, t2, c3, t3],
    )


def last_result_clamped_then_new_steps() -> Case:
    # The newest tool result is edited before the next step: it sits after the last unchanged message.
    u1, c1, t1, c2, t2 = user('task'), *tool_cycle(1), *tool_cycle(2)
    return Case([[u1, c1, t1], [u1, c1, cleared(t1, 'clamped'), c2, t2]], [u1, c1, t1, c2, t2])


def receipts_and_markers_are_not_records() -> Case:
    u1, r1, u2, r2, u3 = user('u1'), reply('r1'), user('u2'), reply('r2'), user('u3')
    marker = SlidingWindowCompaction(max_messages=2, preserve_first_user_message=False).compact([u1, r1, u2, r2])
    assert marker is not None
    return Case([[u1, r1, u2, r2], [*marker, u3], [receipt(), u2, r2, u3]], [u1, r1, u2, r2, u3])


def replayed_run_restamps_everything() -> Case:
    u1, c1, t1, c2, t2 = user('task'), *tool_cycle(1), *tool_cycle(2)
    again = [restamped(m) for m in (u1, c1, t1, c2, t2)]
    return Case([[u1, c1, t1], again, [*again, reply('done')]], [u1, c1, t1, c2, t2, reply('done')])


def tool_cycle(n: int) -> tuple[ModelMessage, ModelMessage]:
    return call(f'call-{n}'), tool_return(f'call-{n}')


CASES: dict[str, Callable[[], Case]] = {
    'A': example_a,
    'B': example_b,
    'B2': example_b2,
    'B3': example_b3,
    'B4': example_b4,
    'app-summary': app_summary_in_place,
    'C': example_c,
    'D': example_d,
    'E': example_e,
    'E-marker': example_e_with_our_marker,
    'E2': example_e2,
    'G': example_g,
    'G-recreated': example_g_recreated,
    'H': example_h,
    'P': example_p,
    'head-kept': head_kept_middle_dropped,
    'summary': summary_at_head_then_kept_tail,
    'cleared': tool_results_cleared_in_place,
    'clamped-last': last_result_clamped_then_new_steps,
    'receipts-markers': receipts_and_markers_are_not_records,
    'replayed': replayed_run_restamps_everything,
}


@pytest.mark.parametrize('name', list(CASES))
def test_builder(name: str) -> None:
    case = CASES[name]()
    record = rebuild(*case.snapshots)
    assert hashes(record) == hashes(case.expected)


@pytest.mark.parametrize('name', list(CASES))
async def test_source_over_a_store(name: str) -> None:
    case = CASES[name]()
    store = InMemoryStepStore()
    await store.register_run(registration('run-1'))
    await save(store, 'run-1', case.snapshots)
    history = await SnapshotHistorySource(store).run_history('run-1')
    assert history is not None
    assert same_messages(history.messages, case.expected)
    assert list(history.hashes) == hashes(case.expected)
    assert history.version == len(case.snapshots) - 1


async def test_f_interrupted_snapshots_are_left_out() -> None:
    u1, u2, u3 = user('u1'), user('u2'), user('u3')
    store = InMemoryStepStore()
    await store.register_run(registration('run-1'))
    await store.save_snapshot(delta('run-1', 0, [], [u1]))
    await store.save_snapshot(delta('run-1', 1, [u1], [u1, u2], state='interrupted'))
    await store.save_snapshot(delta('run-1', 2, [u1, u2], [u1, u2, u3]))

    history = await SnapshotHistorySource(store).run_history('run-1')

    assert history is not None and history.version == 2
    assert same_messages(history.messages, [u1, u2, u3])


def test_the_later_copy_is_kept() -> None:
    u1, r1, u2 = user('u1'), reply('r1'), user('u2')
    later = with_delta(restamped(u2))
    record = rebuild([u1, r1, u2], [u1, r1, later, reply('r2')])
    assert record[2] == later


def test_a_message_completed_in_place_keeps_its_fuller_copy() -> None:
    u1, r1 = user('u1'), reply('partial')
    completed = replace(r1, parts=[*r1.parts, TextPart(' and the rest')])
    record = rebuild([u1, r1], [u1, completed, user('u2')])
    assert record[1] == completed
    assert len(record) == 3


def test_a_cleared_result_never_replaces_the_original() -> None:
    u1, c1, t1, c2, t2 = user('task'), *tool_cycle(1), *tool_cycle(2)
    record = rebuild([u1, c1, t1], [u1, c1, cleared(t1), c2, t2], [u1, c1, cleared(t1), c2, t2, reply('done')])
    assert record[2] == t1


def test_artifacts_go_part_by_part() -> None:
    prompt = UserPromptPart('kept', timestamp=tick())
    both = ModelRequest(parts=[summary_part(), prompt])
    stripped = strip_artifacts(both)
    assert isinstance(stripped, ModelRequest) and list(stripped.parts) == [prompt]
    assert strip_artifacts(summary()) is None
    assert strip_artifacts(legacy_summary()) is None
    assert strip_artifacts(receipt()) is None
    assert strip_artifacts(with_delta(summary())) is None  # nothing but a configuration record is left
    empty = ModelRequest(parts=[])
    assert strip_artifacts(empty) is empty  # persisted empty: not ours to drop
    plain = user('u1')
    assert strip_artifacts(plain) is plain
    builder = RecordBuilder()
    builder.fold([summary(), plain])
    assert hashes(builder.messages) == hashes([recorded(), plain])  # the summary apart, once


async def save(store: InMemoryStepStore, run_id: str, snapshots: Sequence[Sequence[ModelMessage]]) -> None:
    previous: Sequence[ModelMessage] = []
    for index, current in enumerate(snapshots):
        assert await store.save_snapshot(delta(run_id, index, previous, current))
        previous = current
