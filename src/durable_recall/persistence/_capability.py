"""`StepPersistence`: save a run's whole history at every step boundary, durably and idempotently."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.capabilities.durable_operation import durable_operation
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import RunContext

from .._codec import dump_messages
from .._records import RunRegistration, SnapshotDelta
from ..stores._protocol import StepStore
from ._delta import diff_history, is_identity
from ._guard import refuse_workflow_code
from ._settled import snapshot_state

__all__ = ('StepPersistence',)

_enclosing_run_id: ContextVar[str | None] = ContextVar('durable_recall_enclosing_run_id', default=None)
"""The store run id of the persisted run whose code is executing, so a nested run records its parent."""

_MAX_RUN_ID_LENGTH = 200


@dataclass
class StepPersistence(AbstractCapability[Any]):
    """Save the full message history of every agent run at each step boundary.

    Logically a snapshot per step; physically each delta carries only the messages that changed
    since the previous snapshot, and the store keeps each message once per run. A snapshot is
    taken before every model request (the history the model is about to see, tool returns
    included), at run end when the history changed, and when the run fails.

    Each store write is a pydantic-ai `@durable_operation`, so under `TemporalDurability()` it
    runs as an activity and under `DBOSDurability()` as a step. Its key, `(run id, snapshot
    index)`, is derived from counters that replay regenerates, and stores ignore a key they hold,
    so retries, replays and recoveries write nothing twice.

    Args:
        store: Where runs and snapshots go. Share it with `SnapshotHistorySource` for search.
        run_id: A store run id for the next run. It names exactly one run: a second run that
            claims it raises `RunIdConflictError`. Default: the agent run's own id, which durable
            engines keep stable across replay.
        agent_name: Recorded on the run; defaults to the agent's `name`.
        parent_run_id: Recorded on the run; defaults to the store run id of the persisted run
            this one was started from (an agent called inside another agent's tool).
        metadata: String labels recorded on the run.
    """

    store: StepStore
    run_id: str | None = None
    agent_name: str | None = None
    parent_run_id: str | None = None
    metadata: dict[str, str] = field(default_factory=dict[str, str])
    _: KW_ONLY
    id: str | None = 'step_persistence'

    _store_run_id: str | None = field(default=None, init=False, repr=False, compare=False)
    _saved: list[ModelMessage] = field(default_factory=list[ModelMessage], init=False, repr=False, compare=False)
    _next_index: int = field(default=0, init=False, repr=False, compare=False)
    _enclosing: str | None = field(default=None, init=False, repr=False, compare=False)
    _live: list[ModelMessage] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.store, StepStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f'StepPersistence needs a StepStore, got {type(self.store).__name__}: use InMemoryStepStore, '
                'SqliteStepStore, PostgresStepStore or another object implementing the StepStore protocol.'
            )
        if self.run_id is not None:
            _check_run_id('run_id', self.run_id)
        if self.parent_run_id is not None:
            _check_run_id('parent_run_id', self.parent_run_id)
        bad = {k: v for k, v in self.metadata.items() if not isinstance(k, str) or not isinstance(v, str)}  # pyright: ignore[reportUnnecessaryIsInstance]
        if bad:
            raise TypeError(f'StepPersistence metadata must map str to str, got {bad!r}')

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not spec-serializable: a store is a live object."""
        return None

    def get_ordering(self) -> CapabilityOrdering:
        """Outermost, so each snapshot is taken before any compaction rewrites the history."""
        return CapabilityOrdering(position='outermost')

    @property
    def persisted_run_id(self) -> str | None:
        """The store run id of the current run (`None` before it starts)."""
        return self._store_run_id

    async def for_run(self, ctx: RunContext[Any]) -> StepPersistence:
        """A fresh copy per run, so counters start at zero and concurrent runs stay apart."""
        run_id = self.run_id or ctx.run_id
        if run_id is None:  # pragma: no cover - core always sets a run id before for_run
            raise RuntimeError('StepPersistence needs the agent run id, which core sets before capabilities bind.')
        copy = replace(self)
        copy._store_run_id = run_id
        return copy

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> AgentRunResult[Any]:
        """Expose this run's store id to runs started inside it, so they record their parent."""
        self._enclosing = _enclosing_run_id.get()
        token = _enclosing_run_id.set(self._store_run_id)
        try:
            return await handler()
        finally:
            _enclosing_run_id.reset(token)

    async def before_run(self, ctx: RunContext[Any]) -> None:
        """Register the run before its first snapshot."""
        assert self._store_run_id is not None
        parent = self.parent_run_id or self._enclosing
        name = self.agent_name or (ctx.agent.name if ctx.agent is not None else None)
        registration = RunRegistration(
            run_id=self._store_run_id,
            conversation_id=ctx.conversation_id,
            parent_run_id=parent,
            agent_name=name,
            metadata=dict(self.metadata),
            token=ctx.run_id or self._store_run_id,
        )
        await self.register_run(ctx, registration)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Snapshot the settled history the model is about to be sent."""
        self._live = ctx.messages
        await self._save(ctx, ctx.messages)
        return request_context

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        """Snapshot the final history when the run added to it after the last boundary."""
        await self._save(ctx, result.all_messages())
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        """Keep what the failed run produced, marked `interrupted` when a tool call is open, then re-raise."""
        # The context handed to this hook can be a fresh one without messages, so use the live
        # list the run was building, as last seen at a step boundary or node end.
        live = ctx.messages or self._live
        if live:
            await self._save(ctx, live)
        raise error

    async def after_node_run(self, ctx: RunContext[Any], *, node: Any, result: Any) -> Any:
        """Keep a reference to the live history, which `on_run_error` may not be handed."""
        self._live = ctx.messages
        return result

    async def _save(self, ctx: RunContext[Any], messages: Sequence[ModelMessage]) -> None:
        assert self._store_run_id is not None
        current = list(messages)
        diff = diff_history(self._saved, current)
        if self._next_index > 0 and is_identity(diff, len(self._saved)):
            return
        if self._next_index == 0 and not current:
            return
        delta = SnapshotDelta(
            run_id=self._store_run_id,
            index=self._next_index,
            step_index=ctx.run_step,
            state=snapshot_state(current),
            segments=diff.segments,
            messages=dump_messages(diff.new_messages),
        )
        # Counters advance in workflow code, outside the operation, so replay regenerates them.
        self._next_index += 1
        self._saved = current
        await self.save_snapshot(ctx, delta)

    @durable_operation('register_run')
    async def register_run(self, ctx: RunContext[Any], registration: RunRegistration) -> None:
        """Durable unit: register the run (idempotent for the same agent run)."""
        refuse_workflow_code('register_run')
        await self.store.register_run(registration)

    @durable_operation('save_snapshot')
    async def save_snapshot(self, ctx: RunContext[Any], delta: SnapshotDelta) -> bool:
        """Durable unit: store one snapshot delta (a no-op when its index is already stored)."""
        refuse_workflow_code('save_snapshot')
        return await self.store.save_snapshot(delta)


def _check_run_id(name: str, value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > _MAX_RUN_ID_LENGTH:
        raise ValueError(f'StepPersistence {name} must be a non-empty string of at most 200 characters, got {value!r}')
