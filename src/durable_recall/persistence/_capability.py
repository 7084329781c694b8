"""`StepPersistence`: save a run's whole history at every step boundary, durably and idempotently."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering
from pydantic_ai.capabilities.durable_operation import durable_operation
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import RunContext, ToolDefinition

from .._vocabulary import Ranking
from ..base import MAX_RUN_ID_LENGTH, PersistBatch, RunRegistration, SnapshotDelta, dump_messages
from ..search import check_embedding
from ..stores import BatchSaver, StepStore, open_spec_store
from ..text import SEARCH_TOOL_NAME
from ._deferral import must_write_first, remember_written
from ._delta import diff_history, is_identity
from ._guard import refuse_workflow_code
from ._index_on_save import index_saved
from ._patch import deferral_allowed
from ._replayed import check_replayed
from ._settled import snapshot_state

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder

__all__ = ('SPEC_NAME', 'StepPersistence')

SPEC_NAME = 'durable_recall.StepPersistence'
"""`StepPersistence`'s name in agent specs: compatibility data, pinned in a test."""

_enclosing_run_id: ContextVar[str | None] = ContextVar('durable_recall_enclosing_run_id', default=None)
"""The store run id of the persisted run whose code is executing, so a nested run records its parent."""


@dataclass
class StepPersistence(AbstractCapability[Any]):
    """Save the full message history of every agent run at each step boundary.

    A snapshot is taken before every model request (the settled history the model is about to see,
    tool returns included), at run end when the history changed, and when the run fails (marked
    `interrupted` if a tool call is open). Logically that is a snapshot per step; physically each
    snapshot is a delta carrying only the messages that changed, and the store keeps each message
    once per run.

    Writes go through one pydantic-ai `@durable_operation`, `save_steps`: under
    `TemporalDurability()` an activity, under `DBOSDurability()` a step. Keys are `(run id,
    snapshot index)`, from counters that replay regenerates, and stores ignore a key they hold, so
    retries, replays and recoveries write nothing twice.

    When to write: outside a workflow each snapshot is written at its step boundary. Inside
    Temporal or DBOS workflow code the engine's own journal already makes every step durable, so
    snapshots are queued (in deterministic workflow state) and written in one operation at run
    end, at run failure, before a `search_conversation_history` call when the queue holds a
    message the model no longer sees (so recall finds what compaction dropped; a queue the model
    still sees whole waits, and the search runs without a write in front of it), and whenever
    `max_batch_steps` snapshots or `max_batch_bytes` of messages are queued.
    That keeps a workflow's event history within a small factor of the history without
    persistence instead of adding an activity per step.

    Args:
        store: Where runs and snapshots go. Share it with `SnapshotHistorySource` for search.
        run_id: A store run id for the next run. It names exactly one run: a second run that
            claims it raises `RunIdConflictError`. Default: the agent run's own id, which durable
            engines keep stable across replay.
        agent_name: Recorded on the run; defaults to the agent's `name`.
        parent_run_id: Recorded on the run; defaults to the store run id of the persisted run
            this one was started from (an agent called inside another agent's tool).
        metadata: String labels recorded on the run.
        max_batch_steps: In workflow code, write once this many snapshots are queued.
        max_batch_bytes: In workflow code, write once the queued messages reach this many bytes
            of JSON, keeping each operation's payload far below Temporal's 2 MB limit.
        flush_before_tools: Tool names before whose calls queued snapshots are written, when the
            queue holds a message the model no longer sees.
        index_on_save: Index the snapshots in the same durable operation that saves them, after
            they commit, so that a search finds the index current instead of catching it up
            inside the activity or step a turn waits on (see docs/scale-out.md). `False` leaves
            it to the next search, or to `update_index`.
        ranking: `'hybrid'` to embed the messages each save indexes as well (the default when
            `embedder` is given), in the same operation, so that a hybrid search finds their
            vectors and embeds only its query; `None` or `'bm25'`: the BM25 index alone.
        embedder: The `Embedder` the hybrid searches use (vectors are stored under its model's
            name, and a search with another model never reads them); `None` with
            `ranking='hybrid'`: the local default of `durable-recall[semantic]`, loaded by the
            first save that embeds, never in workflow code.
    """

    store: StepStore
    run_id: str | None = None
    agent_name: str | None = None
    parent_run_id: str | None = None
    metadata: dict[str, str] = field(default_factory=dict[str, str])
    max_batch_steps: int = 16
    max_batch_bytes: int = 256 * 1024
    flush_before_tools: frozenset[str] = frozenset({SEARCH_TOOL_NAME})
    index_on_save: bool = True
    _: KW_ONLY
    ranking: Ranking | None = None
    embedder: Embedder | None = None
    id: str | None = 'step_persistence'

    _store_run_id: str | None = field(default=None, init=False, repr=False, compare=False)
    _saved: list[ModelMessage] = field(default_factory=list[ModelMessage], init=False, repr=False, compare=False)
    _next_index: int = field(default=0, init=False, repr=False, compare=False)
    _enclosing: str | None = field(default=None, init=False, repr=False, compare=False)
    _live: list[ModelMessage] | None = field(default=None, init=False, repr=False, compare=False)
    _registration: RunRegistration | None = field(default=None, init=False, repr=False, compare=False)
    _pending: list[SnapshotDelta] = field(default_factory=list[SnapshotDelta], init=False, repr=False, compare=False)
    _pending_bytes: int = field(default=0, init=False, repr=False, compare=False)
    _queued: list[list[ModelMessage]] = field(
        default_factory=list[list[ModelMessage]], init=False, repr=False, compare=False
    )
    _core_run_id: str | None = field(default=None, init=False, repr=False, compare=False)
    _recent: _RecentRuns = field(default_factory=lambda: _RecentRuns(), init=False, repr=False, compare=False)
    _embeds: bool = field(default=False, init=False, repr=False, compare=False)

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
        _check_positive_int('max_batch_steps', self.max_batch_steps)
        _check_positive_int('max_batch_bytes', self.max_batch_bytes)
        if not isinstance(self.index_on_save, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f'StepPersistence index_on_save must be True or False, got {self.index_on_save!r}')
        self.flush_before_tools = frozenset(self.flush_before_tools)
        self._embeds = check_embedding(self.ranking, self.embedder, self.store, 'StepPersistence')
        if self._embeds and not self.index_on_save:
            raise ValueError(
                "StepPersistence ranking='hybrid' embeds what each save indexes, and index_on_save=False "
                'indexes nothing at save: leave index_on_save on, or embed with update_index(..., embedder=...).'
            )

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Its name in an agent spec (YAML or JSON): prefixed, so that it cannot collide with another library's."""
        return SPEC_NAME

    @classmethod
    def from_spec(cls, store: str, **options: Any) -> StepPersistence:
        """Build it from an agent spec: the store as a URL `open_store` accepts, the other arguments as `__init__`'s.

        Raises:
            TypeError, ValueError, StoreConfigurationError: A bad argument, named.
        """
        flush = options.get('flush_before_tools')
        if flush is not None and (isinstance(flush, str) or not isinstance(flush, list | tuple | set | frozenset)):
            raise TypeError(f'flush_before_tools must be a list of tool names, got {flush!r}')
        return cls(open_spec_store(store, 'StepPersistence'), **options)

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
        copy._core_run_id = ctx.run_id
        copy._recent = self._recent
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
        """Register the run before its first snapshot (in workflow code: with its first write)."""
        assert self._store_run_id is not None
        self._registration = RunRegistration(
            run_id=self._store_run_id,
            conversation_id=ctx.conversation_id,
            parent_run_id=self.parent_run_id or self._enclosing,
            agent_name=self.agent_name or (ctx.agent.name if ctx.agent is not None else None),
            metadata=dict(self.metadata),
            token=ctx.run_id or self._store_run_id,
        )
        if not ctx.in_durable_context:
            await self._flush(ctx)

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Snapshot the settled history the model is about to be sent."""
        self._live = ctx.messages
        await self._snapshot(ctx, ctx.messages)
        return request_context

    async def after_node_run(self, ctx: RunContext[Any], *, node: Any, result: Any) -> Any:
        """Keep a reference to the live history, which `on_run_error` may not be handed."""
        self._live = ctx.messages
        return result

    async def before_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any
    ) -> Any:
        """Write queued snapshots before a recall tool runs, when it could need them (`_deferral`)."""
        if call.tool_name in self.flush_before_tools and (
            must_write_first(self._queued, ctx.messages) or not await deferral_allowed()
        ):
            await self._flush(ctx)
        return args

    async def after_run(self, ctx: RunContext[Any], *, result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        """Snapshot the final history when the run added to it, and write everything queued."""
        await self._snapshot(ctx, result.all_messages(), flush=True)
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> AgentRunResult[Any]:
        """Keep what the failed run produced, then re-raise the run's error."""
        # The context handed to this hook can be a fresh one without messages, so use the live
        # list the run was building, as last seen at a step boundary or node end.
        live = ctx.messages or self._live or []
        try:
            await self._snapshot(ctx, live, flush=True)
        except Exception as persist_error:
            error.add_note(f'StepPersistence could not save the failed run: {persist_error!r}')
        raise error

    async def _snapshot(self, ctx: RunContext[Any], messages: Sequence[ModelMessage], *, flush: bool = False) -> None:
        assert self._store_run_id is not None
        current = list(messages)
        diff = diff_history(self._saved, current)
        changed = not is_identity(diff, len(self._saved)) if self._next_index > 0 else bool(current)
        if changed:
            base = self._recent.base_for(current, self._core_run_id) if self._next_index == 0 else None
            if base is not None:
                diff = diff_history(base.messages, current)
            delta = SnapshotDelta(
                run_id=self._store_run_id,
                index=self._next_index,
                step_index=ctx.run_step,
                state=snapshot_state(current),
                segments=diff.segments,
                messages=dump_messages(diff.new_messages),
                base_run_id=base.store_run_id if base is not None else None,
                base_index=base.index if base is not None else None,
            )
            # Counters and the queue live in (deterministic) run state, so replay regenerates them.
            self._next_index += 1
            self._saved = current
            self._pending.append(delta)
            self._queued.append(current)
            self._pending_bytes += sum(len(body) for body in delta.messages)
        batch_full = len(self._pending) >= self.max_batch_steps or self._pending_bytes >= self.max_batch_bytes
        if flush or batch_full or not ctx.in_durable_context:
            await self._flush(ctx)

    async def _flush(self, ctx: RunContext[Any]) -> None:
        if not self._pending and self._registration is None:
            return
        batch = PersistBatch(registration=self._registration, deltas=self._pending)
        queued = self._queued
        self._registration = None
        self._pending = []
        self._queued = []
        self._pending_bytes = 0
        await self.save_steps(ctx, batch)
        if ctx.in_durable_context:
            remember_written(queued)
        if self._next_index and self._core_run_id is not None and self._store_run_id is not None:
            self._recent.remember(self._core_run_id, _SavedRun(self._store_run_id, self._next_index - 1, self._saved))

    @durable_operation('save_steps')
    async def save_steps(self, ctx: RunContext[Any], batch: PersistBatch) -> int:
        """Durable unit: register the run if asked, then store the deltas; returns how many were new.

        Idempotent as a whole: a retry re-registers with the same token and re-sends deltas whose
        indexes the store already holds, which it ignores once it has checked that they hold the
        same content (`check_replayed`).

        Raises:
            RunIdConflictError: The run id is registered by another run, or holds other content
                at a snapshot index this batch sends again.
        """
        refuse_workflow_code('save_steps')
        store = self.store
        if isinstance(store, BatchSaver) and batch.deltas:
            # One store transaction for the registration and the whole batch: one commit (and fsync).
            taken = await store.save_batch(batch)
        else:
            if batch.registration is not None:
                await store.register_run(batch.registration)
            if not batch.deltas:
                return 0
            # One store transaction for the whole batch: one commit (and fsync) rather than one per step.
            taken = await store.save_snapshots(batch.deltas)
        ignored = [delta for delta, new in zip(batch.deltas, taken, strict=True) if not new]
        if ignored:
            # A replay stores nothing new; a reused run id must not pass for one.
            await check_replayed(self.store, ignored)
        if self.index_on_save and batch.deltas:
            # Sent again (a retry), the deltas may be saved but not indexed: each run says which.
            await index_saved(store, batch.deltas, embed=self._embeds, embedder=self.embedder)
        return sum(taken)


@dataclass(frozen=True)
class _SavedRun:
    store_run_id: str
    index: int
    messages: list[ModelMessage]


class _RecentRuns:
    """The last written snapshot of recent runs, shared by an agent's runs, keyed by core run id.

    A run that continues a conversation gets the previous run's messages (stamped with that run's
    id) through `message_history`; its first snapshot can then name them by position in the
    previous run's snapshot instead of shipping them through the durable journal again. Only
    written snapshots are remembered, so the store always holds the base a delta names. Bounded,
    because one agent object serves every workflow on a worker.
    """

    def __init__(self, capacity: int = 256) -> None:
        self._runs: dict[str, _SavedRun] = {}
        self._capacity = capacity

    def remember(self, core_run_id: str, saved: _SavedRun) -> None:
        self._runs.pop(core_run_id, None)
        self._runs[core_run_id] = saved
        while len(self._runs) > self._capacity:
            del self._runs[next(iter(self._runs))]

    def base_for(self, messages: Sequence[ModelMessage], core_run_id: str | None) -> _SavedRun | None:
        """The remembered run that created the newest inherited message, if any."""
        for message in reversed(messages):
            if message.run_id is not None and message.run_id != core_run_id:
                return self._runs.get(message.run_id)
        return None


def _check_run_id(name: str, value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > MAX_RUN_ID_LENGTH:
        raise ValueError(
            f'StepPersistence {name} must be a non-empty string of at most {MAX_RUN_ID_LENGTH} characters, '
            f'got {value!r}'
        )


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f'StepPersistence {name} must be a positive int, got {value!r}')
