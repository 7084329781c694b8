"""`SlidingWindowCompaction`: keep the newest messages in context; the store keeps the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse
from pydantic_ai.tools import RunContext

from ._cuts import Split, cut_points, head_message, split_history
from ._options import (
    check_below,
    check_bool,
    check_fraction,
    check_one_token_trigger,
    check_optional_count,
    check_tokenizer,
    check_window,
    resolve_limit,
)
from ._request_hook import CompactBeforeRequest
from ._size import Tokenizer, estimate_message, measure
from ._summary import (
    CORE_COMPACTION,
    SLIDING_WINDOW_HANDLER,
    compaction_after,
    dropped_summary,
    standing_prompt,
    with_summary,
)

if CORE_COMPACTION or TYPE_CHECKING:
    from pydantic_ai.capabilities.compaction import CompactionRequest, CompactionResult

__all__ = ('SlidingWindowCompaction',)


@dataclass
class SlidingWindowCompaction(CompactBeforeRequest, AbstractCapability[Any]):
    """Drop the oldest messages once the history crosses a trigger, down to a smaller target.

    **Inside a run.** A cut falls between tool cycles, never between a call and its return, so a
    single run's long tool loop compacts too. The kept history opens with a user turn: the run's
    first prompt (with `preserve_first_user_message`, the default), carrying our marker.

    **Hysteresis, for the prompt cache.** Once over a trigger it cuts down to the target
    (`keep_messages`, `keep_tokens`), well below it, and then leaves the history alone until a
    trigger is crossed again. Between two cuts every request extends the previous one, so a
    provider's prompt cache keeps hitting; with a target at the trigger the head would change, and
    the cache miss, on every request.

    **Tokens.** The size of the history is the input and output tokens the provider reported for
    the last response, plus an estimate (characters / 4, or `tokenizer`) of what came after it;
    the whole history is estimated until a response reports usage. A cut's kept part is estimated,
    in the same scale (see `durable_recall.compaction._size`).

    **Recall.** The edit is persistent (the run's history itself shrinks). `StepPersistence`
    snapshots before this runs, so the store keeps every dropped message and
    `ConversationSearch` finds them; the marker tells the model so.

    **Core compaction (pydantic-ai 2.78+).** It also answers core's `compact_history` hook
    (`Agent.compact_history`, `run(compact=...)`, `RunContext.request_compaction`, the retry after
    a context overflow), cutting even when no trigger is crossed, under the handler id
    `'durable_recall.sliding_window'`; see `compact_history` and docs/compaction-core.md.

    **Durable execution.** Pure: no clock, no I/O, no randomness; the same history gives the
    same cut on every replay.

    Args:
        max_messages: Trigger: compact when the history holds more messages than this (every
            request and response counts, the preserved prompt included).
        max_tokens: Trigger: compact when the history measures more tokens than this.
        keep_messages: Target: after a cut, the history holds at most this many messages (or
            the fewest a cut can leave: the newest tool cycle is never split). Must be below
            `max_messages`. Default: half of `max_messages` when that is set.
        keep_tokens: Target: after a cut, the history measures at most this many tokens. Must be
            below `max_tokens`. Default: half the token trigger when one is set.
        preserve_first_user_message: Keep the first user request (the task) at the head after
            every cut. Without it, and without `marker`, a cut can only fall before a user prompt,
            which a single run's tool loop does not have.
        marker: Write a note into the head saying how many messages were dropped and that
            `search_conversation_history` recalls them. It carries `COMPACTION_MARKER_KEY`
            metadata, so search never indexes it, and the record rebuild uses its count.
        max_fraction: Trigger: compact when the history measures more than this fraction of the
            model's context window (pydantic-ai's `Model.context_window`, from the model's
            profile or the genai-prices registry). Exclusive with `max_tokens`. When the window
            is unknown and `context_window` is not given, this trigger stays off and a warning
            says so once.
        context_window: The window `max_fraction` is taken of, for a model pydantic-ai does not
            know (or knows wrongly).
        tokenizer: Counts a text's tokens, instead of the characters / 4 estimate.
        id: The capability's id.
    """

    max_messages: int | None = None
    max_tokens: int | None = None
    keep_messages: int | None = None
    keep_tokens: int | None = None
    _: KW_ONLY
    preserve_first_user_message: bool = True
    marker: bool = True
    max_fraction: float | None = None
    context_window: int | None = None
    tokenizer: Tokenizer | None = None
    id: str | None = 'sliding_window_compaction'
    _warned_window: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_optional_count('max_messages', self.max_messages, 1)
        check_optional_count('max_tokens', self.max_tokens, 1)
        check_fraction('max_fraction', self.max_fraction)
        check_optional_count('keep_messages', self.keep_messages, 0)
        check_optional_count('keep_tokens', self.keep_tokens, 0)
        check_window(self.context_window)
        check_bool('preserve_first_user_message', self.preserve_first_user_message)
        check_bool('marker', self.marker)
        check_tokenizer(self.tokenizer)
        if self.max_messages is None and self.max_tokens is None and self.max_fraction is None:
            raise ValueError(
                'SlidingWindowCompaction needs a trigger: set max_messages, max_tokens or max_fraction '
                '(for example SlidingWindowCompaction(max_messages=40))'
            )
        check_one_token_trigger(self.max_tokens, self.max_fraction)
        check_below('keep_messages', self.keep_messages, 'max_messages', self.max_messages)
        check_below('keep_tokens', self.keep_tokens, 'max_tokens', self.max_tokens)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Its name in an agent spec (YAML or JSON): prefixed, so that it cannot collide with another library's.

        Pinned in a test: specs name it. Every argument is plain data, so the default `from_spec` builds it.
        """
        return 'durable_recall.SlidingWindowCompaction'

    def compact(
        self, messages: Sequence[ModelMessage], *, context_window: int | None = None
    ) -> list[ModelMessage] | None:
        """The compacted history, or `None` when no trigger is crossed or no cut is possible.

        Args:
            messages: The history about to be sent; its last message is the pending request.
            context_window: The model's window, for `max_fraction`.
        """
        plan = self._plan(messages, context_window, forced=False, fewest=False)
        if plan is None:
            return None
        split, chosen = plan
        head = head_message(split.head, split.dropped + chosen, marker=self.marker)
        return [*([] if head is None else [head]), *split.body[chosen:]]

    def _plan(
        self, messages: Sequence[ModelMessage], context_window: int | None, *, forced: bool, fewest: bool
    ) -> tuple[Split, int] | None:
        """The split history and the cut into its body, or `None` when no trigger is crossed or no cut is possible.

        Args:
            messages: The history; its last message is the pending request.
            context_window: The model's window, for `max_fraction`.
            forced: Cut even when no trigger is crossed (core asked for a compaction).
            fewest: Keep the fewest messages a cut can leave, whatever the targets (the model
                refused the history as too long for its window).
        """
        sizes = [estimate_message(message, self.tokenizer) for message in messages]
        token_limit = resolve_limit(self.max_tokens, self.max_fraction, context_window)
        tokens = measure(messages, sizes) if token_limit is not None or self.keep_tokens is not None else None
        over_messages = self.max_messages is not None and len(messages) > self.max_messages
        over_tokens = token_limit is not None and tokens is not None and tokens.total > token_limit
        if not (forced or over_messages or over_tokens):
            return None
        split = split_history(messages, preserve=self.preserve_first_user_message)
        needs_request = split.head is None and not (self.marker or forced)
        points = cut_points(split.body, needs_request=needs_request, after_prompt=split.head is not None)
        if not points and split.head is not None and not any(isinstance(m, ModelResponse) for m in split.body):
            # Only requests follow the preserved prompt, so no cut can start at a response: a cut
            # at a request beats never trimming. The kept request sits next to the head, so a
            # later run that inherits the history merges the two (see `cut_points`).
            points = cut_points(split.body, needs_request=needs_request)
        if not points:
            return None
        if fewest:
            return split, points[-1]
        keep_messages = self.keep_messages
        if keep_messages is None and self.max_messages is not None:
            keep_messages = self.max_messages // 2
        keep_tokens = self.keep_tokens
        if keep_tokens is None and token_limit is not None:
            keep_tokens = token_limit // 2
        overhead = tokens.overhead if tokens is not None else 0
        kept_sizes = [0] * (len(split.body) + 1)  # kept_sizes[i]: the estimate of split.body[i:]
        for index in range(len(split.body) - 1, -1, -1):
            kept_sizes[index] = kept_sizes[index + 1] + estimate_message(split.body[index], self.tokenizer)
        for point in points:
            head = head_message(split.head, split.dropped + point, marker=self.marker or forced)
            head_count = 0 if head is None else 1
            if keep_messages is not None and head_count + len(split.body) - point > keep_messages:
                continue
            if keep_tokens is not None:
                head_tokens = 0 if head is None else estimate_message(head, self.tokenizer)
                if overhead + head_tokens + kept_sizes[point] > keep_tokens:
                    continue
            return split, point
        return split, points[-1]

    if CORE_COMPACTION:

        async def compact_history(self, ctx: RunContext[Any], request: CompactionRequest) -> CompactionResult | None:
            """Answer core's request to compact (`Agent.compact_history`, `request_compaction`, a context overflow).

            Cuts even when no trigger is crossed, down to the targets (at least the oldest
            cycle); for `'context_overflow'`, to the fewest messages a cut can leave, since the
            model refused the history the targets allowed. The result's `CompactionPart` rides in
            the first request (see `durable_recall.compaction._summary`) and says how many
            messages moved out of view, and that search recalls them. `focus` is not used: the
            window keeps the newest messages whole and summarizes nothing, and the search tool
            recalls whatever the focus names. Returns `None` (another capability may compact)
            when no cut is possible, or when a kept message holds another capability's or a
            provider's `CompactionPart`.
            """
            window = self._window(request.conversation_request.model)
            plan = self._plan(request.messages, window, forced=True, fewest=request.reason == 'context_overflow')
            if plan is None:
                return None
            split, chosen = plan
            kept = split.body[chosen:]
            if compaction_after(kept):
                return None
            part = dropped_summary(split.dropped + chosen)
            if split.head is not None:
                holder = with_summary(split.head, part)
            else:
                first = request.messages[0]
                holder = ModelRequest(
                    parts=[*standing_prompt(request.messages), part],
                    timestamp=first.timestamp if isinstance(first, ModelRequest) else None,
                )
            return CompactionResult(messages=[holder, *kept], part=part, handler=SLIDING_WINDOW_HANDLER, kept_from=1)
