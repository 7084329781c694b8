"""Property: whatever mix of growth and compaction a run goes through, the record is its true history.

A scenario is a run: at each step one history operation (grow, drop a prefix, keep the head and
drop the middle, summarize the head, clear a tool result in place, re-stamp everything as a replay
would, append an instruction change, our sliding window) and then new messages; then a snapshot,
saved to an `InMemoryStepStore` as a delta. The record must be every message the run produced,
once, in order (by content hash), each the latest unedited copy; reading it after every
snapshot (incremental folds) must equal reading it once at the end; and so must a builder that is
saved as state and resumed before every snapshot, as the persistent index folds.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import ModelMessage, ModelRequest

from durable_recall import InMemoryStepStore
from durable_recall.compaction import SlidingWindowCompaction, is_compaction_marker
from durable_recall.history import FoldState, RecordBuilder, message_hash, strip_artifacts, summary_view
from durable_recall.search import SnapshotHistorySource
from durable_recall.text import message_role
from tests.stores._helpers import delta, registration

from ._messages import call, cleared, hashes, reply, restamped, summary, tool_return, user, with_delta

pytestmark = pytest.mark.anyio

OPERATIONS = (
    'grow',
    'drop-prefix',
    'keep-head',
    'summarize',
    'summarize-after-head',
    'clear',
    'restamp',
    'delta',
    'window',
)
KINDS: tuple[str, ...] = ('user', 'reply', 'cycle')
Step = tuple[str, int, list[tuple[str, int | None]]]


def scenarios(operations: tuple[str, ...], contents: st.SearchStrategy[int | None]) -> st.SearchStrategy[list[Step]]:
    """Steps of (operation, its amount, new messages as (kind, content number or None for a fresh one))."""
    new = st.lists(st.tuples(st.sampled_from(KINDS), contents), max_size=3)
    step = st.tuples(st.sampled_from(operations), st.integers(min_value=0, max_value=6), new)
    return st.lists(step, min_size=1, max_size=10)


@dataclass
class Slot:
    """One message of the live history: which true message it is (None: an artifact), and whether edited."""

    message: ModelMessage
    true_index: int | None
    edited: bool = False


@dataclass
class Run:
    true: list[ModelMessage] = field(default_factory=list[ModelMessage])
    latest: list[ModelMessage] = field(default_factory=list[ModelMessage])
    live: list[Slot] = field(default_factory=list[Slot])
    ids: itertools.count[int] = field(default_factory=itertools.count)
    carried: frozenset[str] = frozenset()
    """The hashes of the summaries the last snapshot carried."""

    def record_summaries(self, at: int) -> None:
        """Each summary the last snapshot did not carry is recorded once, before this step's new messages."""
        views = [view for slot in self.live if (view := summary_view(slot.message)) is not None]
        new = [view for view in views if message_hash(view) not in self.carried]
        self.true[at:at] = new
        self.latest[at:at] = new
        for slot in self.live:
            if slot.true_index is not None and slot.true_index >= at:
                slot.true_index += len(new)
        self.carried = frozenset(message_hash(view) for view in views)

    def add(self, message: ModelMessage) -> None:
        self.live.append(Slot(message, len(self.true)))
        self.true.append(message)
        self.latest.append(message)

    def grow(self, kinds: list[tuple[str, int | None]]) -> None:
        for kind, content in kinds:
            n = next(self.ids) if content is None else content
            if kind == 'user':
                self.add(user(f'question {n}'))
            elif kind == 'reply':
                self.add(reply(f'answer {n}'))
            else:
                self.add(call(f'call-{n}'))
                self.add(tool_return(f'call-{n}'))

    def replace(self, slot: Slot, message: ModelMessage, *, version: bool) -> None:
        slot.message = message
        if version and slot.true_index is not None and not slot.edited:
            self.latest[slot.true_index] = message

    def apply(self, operation: str, amount: int) -> None:
        live = self.live
        if operation == 'drop-prefix':
            del live[: min(amount, len(live))]
        elif operation == 'keep-head' and live:
            del live[1 : 1 + amount]
        elif operation == 'summarize':
            live[: min(amount, len(live))] = [Slot(summary(f'summary {next(self.ids)}'), None)]
        elif operation == 'summarize-after-head' and live:
            live[1 : 1 + amount] = [Slot(summary(f'summary {next(self.ids)}'), None)]
        elif operation == 'clear':
            results = [s for s in live if not s.edited and s.true_index is not None and _is_tool_return(s.message)]
            if results:
                slot = results[amount % len(results)]
                self.replace(slot, cleared(slot.message), version=False)
                slot.edited = True
        elif operation == 'restamp':
            for slot in live:
                self.replace(slot, restamped(slot.message), version=True)
        elif operation == 'delta':
            requests = [s for s in live if isinstance(s.message, ModelRequest) and not is_compaction_marker(s.message)]
            if requests:
                slot = requests[amount % len(requests)]
                self.replace(slot, with_delta(slot.message), version=True)
        elif operation == 'window':
            self._window(max(amount, 1))

    def _window(self, max_messages: int) -> None:
        # The marker standing alone (the preserved head is covered in tests/compaction).
        window = SlidingWindowCompaction(
            max_messages=max_messages + 1, keep_messages=max_messages, preserve_first_user_message=False
        )
        compacted = window.compact([s.message for s in self.live])
        if compacted is None:
            return
        by_identity = {id(s.message): s for s in self.live}
        self.live = [by_identity.get(id(m)) or Slot(m, None) for m in compacted]


def _is_tool_return(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and any(p.part_kind == 'tool-return' for p in message.parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios(OPERATIONS, st.none()))
async def test_the_record_is_the_true_history(scenario: list[Step]) -> None:
    await check(scenario)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scenario=scenarios(('grow', 'restamp', 'delta', 'window'), st.integers(min_value=0, max_value=1)))
async def test_repeated_exchanges_are_kept_apart(scenario: list[Step]) -> None:
    """Word-for-word repeats (equal hashes): exact under growth, replays and our marked sliding window."""
    await check(scenario)


async def check(scenario: list[Step]) -> None:
    store = InMemoryStepStore()
    await store.register_run(registration('run-1'))
    incremental = SnapshotHistorySource(store)
    resumed = Resumed()
    run = Run()
    previous: list[ModelMessage] = []
    for index, (operation, amount, kinds) in enumerate(scenario):
        run.apply(operation, amount)
        grown_from = len(run.true)
        run.grow(kinds)
        run.record_summaries(grown_from)
        snapshot = [slot.message for slot in run.live]
        assert await store.save_snapshot(delta('run-1', index, previous, snapshot))
        previous = snapshot
        history = await incremental.run_history('run-1')
        assert history is not None and history.version == index
        assert list(history.hashes) == hashes(run.true[: len(history.hashes)])
        await resumed.fold_next(store, index)

    final = await incremental.run_history('run-1')
    once = await SnapshotHistorySource(store).run_history('run-1')
    assert final is not None and once is not None
    assert list(final.hashes) == hashes(run.true)
    assert list(final.messages) == run.latest
    assert final.hashes == once.hashes and list(final.messages) == list(once.messages)
    assert resumed.hashes() == list(final.hashes)
    assert await resumed.messages(store) == run.latest


@dataclass
class Resumed:
    """Folds each snapshot in a builder resumed from the last one's JSON state, keeping only what changed."""

    state: FoldState | None = None
    seqs: dict[int, int] = field(default_factory=dict[int, int])
    digests: dict[int, str] = field(default_factory=dict[int, str])
    summaries: set[int] = field(default_factory=set[int])

    async def fold_next(self, store: InMemoryStepStore, index: int) -> None:
        (snapshot,) = await store.list_snapshots('run-1', after=index - 1)
        if self.state is None:
            builder = RecordBuilder(track_changes=True)
        else:
            previous, positions = self.state.needed()
            loaded = await store.read_messages('run-1', [*previous, *(self.seqs[p] for p in positions)])
            builder = RecordBuilder.resume(self.state, loaded, {p: loaded[self.seqs[p]] for p in positions})
        builder.fold(snapshot.messages, snapshot.seqs)
        for position in builder.take_changes():
            self.seqs[position] = builder.seq(position)
            self.digests[position] = builder.hash(position)
            if message_role(builder.message(position)) == 'summary':
                self.summaries.add(position)
        self.state = FoldState.from_bytes(builder.state.to_bytes())

    def hashes(self) -> list[str]:
        return [self.digests[position] for position in range(len(self.digests))]

    async def messages(self, store: InMemoryStepStore) -> list[ModelMessage]:
        loaded = await store.read_messages('run-1', list(self.seqs.values()))
        out: list[ModelMessage] = []
        for position in range(len(self.seqs)):
            message = loaded[self.seqs[position]]
            view = summary_view(message) if position in self.summaries else strip_artifacts(message)
            out.append(view or message)
        return out
