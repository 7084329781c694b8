"""Realistic agent histories, saved into our stores exactly as `StepPersistence` saves them.

`generate_conversation` (from `benchmarks._script`) makes a deterministic conversation: runs threaded
through `message_history`, tool calls with JSON arguments, tool results with code, logs, paths and
hex ids, occasional long messages, a Zipf vocabulary. Two ways put it into a store:

* `replay_with_agent`: a real `Agent` with a `FunctionModel` replaying the script, with
  `StepPersistence` and `SlidingWindowCompaction`. Faithful by construction, and slow
  (about 2.7 ms of agent machinery per step before any persistence).
* `write_conversation`: the direct writer. It replays what core and the two capabilities do to
  the history (history repair at run start, a snapshot before every model request and at run
  end, compaction after the snapshot, the delta against the last saved snapshot or, for a run's
  first snapshot, against the previous run's) and saves the same `SnapshotDelta`s through
  `store.save_snapshot`. The smoke test checks that both give the same snapshots.

Ingest time counts only persistence work: the diff, the JSON dump and the store calls, which is
what `StepPersistence` adds to a step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.usage import UsageLimits

from benchmarks._script import (
    MODEL_NAME,
    Conversation,
    Run,
    generate_conversation,
    response_for,
    scripted_agent_parts,
)
from benchmarks._writer import START
from durable_recall import SlidingWindowCompaction, SnapshotHistorySource, StepPersistence, StepStore
from durable_recall.base._codec import dump_messages
from durable_recall.persistence import snapshot_state
from durable_recall.persistence._delta import diff_history, is_identity
from durable_recall.stores import BatchSaver, PersistBatch, RunRegistration, SnapshotDelta

__all__ = (
    'AGENT_NAME',
    'WINDOW',
    'Ingest',
    'generate_conversation',
    'replay_with_agent',
    'write_conversation',
)

AGENT_NAME = 'bench-agent'
WINDOW = 40
"""`SlidingWindowCompaction(max_messages=...)` in every benchmark history."""

_MODEL_ID: dict[str, Any] = (
    {'model_id': f'function:{MODEL_NAME}'} if any(f.name == 'model_id' for f in fields(ModelResponse)) else {}
)
"""What a FunctionModel stamps on its responses; `model_id` is newer than pydantic-ai-slim 2.62."""


@dataclass
class Ingest:
    """What one write of a conversation cost and produced.

    Attributes:
        messages: Distinct messages of the conversation (each counted once).
        snapshots: Snapshot deltas saved.
        seconds: Time spent in persistence work (diff, JSON dump, store calls).
        index_seconds: Time the search index took to catch up with the written snapshots.
        history: Every message of the conversation once, in creation order (the ground truth),
            when asked for.
    """

    messages: int = 0
    snapshots: int = 0
    seconds: float = 0.0
    index_seconds: float = 0.0
    history: list[ModelMessage] = field(default_factory=list[ModelMessage])

    @property
    def per_second(self) -> float:
        """Messages per second of persistence and indexing work together."""
        total = self.seconds + self.index_seconds
        return self.messages / total if total else 0.0

    @property
    def store_per_second(self) -> float:
        """Messages per second of persistence work alone."""
        return self.messages / self.seconds if self.seconds else 0.0

    @property
    def index_per_second(self) -> float:
        """Messages per second of indexing alone."""
        return self.messages / self.index_seconds if self.index_seconds else 0.0


@dataclass(frozen=True)
class _Saved:
    run_id: str
    index: int
    messages: list[ModelMessage]


class _Clock:
    def __init__(self) -> None:
        self.now = START

    def tick(self) -> Any:
        self.now += timedelta(seconds=7)
        return self.now


class _RunWriter:
    """`StepPersistence` for one run, minus the agent: diff, delta, save.

    Deltas are written as `StepPersistence` writes them in workflow code (where durable agents
    run): queued, and saved in one `save_snapshots` transaction every 16 steps and at run end;
    the run's registration goes with its first batch (one `save_batch` transaction, on a store
    that offers it, as `StepPersistence.save_steps` sends it).
    """

    BATCH_STEPS = 16

    def __init__(self, store: StepStore, run: Run, conversation_id: str, base: _Saved | None, ingest: Ingest) -> None:
        self.store = store
        self.run = run
        self.conversation_id = conversation_id
        self.base = base
        self.ingest = ingest
        self.saved: list[ModelMessage] = []
        self.next_index = 0
        self.queue: list[SnapshotDelta] = []
        self.registration: RunRegistration | None = None

    async def register(self) -> None:
        started = time.perf_counter()
        # Sent with the first batch, as `StepPersistence` queues it (`save_steps`).
        self.registration = RunRegistration(
            run_id=self.run.run_id, conversation_id=self.conversation_id, agent_name=AGENT_NAME, token=self.run.run_id
        )
        self.ingest.seconds += time.perf_counter() - started

    async def snapshot(self, messages: Sequence[ModelMessage], step_index: int) -> None:
        started = time.perf_counter()
        current = list(messages)
        diff = diff_history(self.saved, current)
        changed = not is_identity(diff, len(self.saved)) if self.next_index > 0 else bool(current)
        if changed:
            base = self.base if self.next_index == 0 and _inherits(current, self.base, self.run.run_id) else None
            if base is not None:
                diff = diff_history(base.messages, current)
            delta = SnapshotDelta(
                run_id=self.run.run_id,
                index=self.next_index,
                step_index=step_index,
                state=snapshot_state(current),
                segments=diff.segments,
                messages=dump_messages(diff.new_messages),
                base_run_id=base.run_id if base is not None else None,
                base_index=base.index if base is not None else None,
            )
            self.next_index += 1
            self.saved = current
            self.queue.append(delta)
            self.ingest.snapshots += 1
            if len(self.queue) >= self.BATCH_STEPS:
                await self._write()
        self.ingest.seconds += time.perf_counter() - started

    async def flush(self) -> None:
        """Write what is queued (the run ended)."""
        started = time.perf_counter()
        await self._write()
        self.ingest.seconds += time.perf_counter() - started

    async def _write(self) -> None:
        registration, self.registration = self.registration, None
        if isinstance(self.store, BatchSaver) and self.queue:
            await self.store.save_batch(PersistBatch(registration=registration, deltas=self.queue))
            self.queue = []
            return
        if registration is not None:
            await self.store.register_run(registration)
        if self.queue:
            await self.store.save_snapshots(self.queue)
            self.queue = []

    def last(self) -> _Saved | None:
        return _Saved(self.run.run_id, self.next_index - 1, self.saved) if self.next_index else None


def _inherits(messages: Sequence[ModelMessage], base: _Saved | None, own_run_id: str) -> bool:
    """Whether the newest inherited message was created by the base run (as `StepPersistence` checks)."""
    if base is None:
        return False
    for message in reversed(messages):
        if message.run_id is not None and message.run_id != own_run_id:
            return message.run_id == base.run_id
    return False


async def write_conversation(
    store: StepStore, conversation: Conversation, *, window: int = WINDOW, keep_history: bool = True
) -> Ingest:
    """Save a conversation's snapshots into `store` as `StepPersistence` would, without an agent."""
    compaction = SlidingWindowCompaction(max_messages=window)
    ingest = Ingest()
    clock = _Clock()
    inherited: list[ModelMessage] = []
    base: _Saved | None = None
    cid = conversation.conversation_id
    for run in conversation.runs:
        writer = _RunWriter(store, run, cid, base, ingest)
        await writer.register()
        messages: list[ModelMessage] = repair_messages(inherited, repair_last_response=False) if inherited else []
        created: list[ModelMessage] = []
        now = clock.tick()
        prompt = ModelRequest(
            parts=[UserPromptPart(run.prompt, timestamp=now)], timestamp=now, run_id=run.run_id, conversation_id=cid
        )
        messages.append(prompt)
        created.append(prompt)
        for step_number, step in enumerate(run.steps, start=1):
            await writer.snapshot(messages, step_number)
            compacted = compaction.compact(messages)
            if compacted is not None:
                messages[:] = compacted
            response = replace(
                response_for(step),
                model_name=MODEL_NAME,
                **_MODEL_ID,
                timestamp=clock.tick(),
                run_id=run.run_id,
                conversation_id=cid,
            )
            messages.append(response)
            created.append(response)
            if step.calls:
                now = clock.tick()
                returns = ModelRequest(
                    parts=[ToolReturnPart(call.tool, call.result, call.call_id, timestamp=now) for call in step.calls],
                    timestamp=now,
                    run_id=run.run_id,
                    conversation_id=cid,
                )
                messages.append(returns)
                created.append(returns)
        await writer.snapshot(messages, 0)
        await writer.flush()
        base = writer.last()
        inherited = messages
        ingest.messages += len(created)
        if keep_history:
            ingest.history.extend(created)
    return ingest


async def replay_with_agent(store: StepStore, conversation: Conversation, *, window: int = WINDOW) -> Ingest:
    """Replay a conversation through a real `Agent` with `StepPersistence` and `SlidingWindowCompaction`.

    `seconds` is the wall time of the whole replay, agent machinery included.
    """
    model, tools, start = scripted_agent_parts(conversation)
    agent = Agent(
        model,
        name=AGENT_NAME,
        tools=tools,
        capabilities=[StepPersistence(store), SlidingWindowCompaction(max_messages=window)],
    )
    ingest = Ingest()
    history: list[ModelMessage] | None = None
    started = time.perf_counter()
    for run in conversation.runs:
        start(run)
        result = await agent.run(
            run.prompt,
            message_history=history,
            conversation_id=conversation.conversation_id,
            run_id=run.run_id,
            usage_limits=UsageLimits(request_limit=None),
        )
        history = result.all_messages()
    ingest.seconds = time.perf_counter() - started
    # What each run produced, from the store: compaction inside a run shrinks the run's own
    # history, so `result.new_messages()` no longer holds every message the run persisted.
    source = SnapshotHistorySource(store)
    for run in conversation.runs:
        record = await source.run_history(run.run_id)
        assert record is not None, f'run {run.run_id} was not persisted'
        new = [message for message in record.messages if message.run_id == run.run_id]
        ingest.messages += len(new)
        ingest.history.extend(new)
    return ingest
