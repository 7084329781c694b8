"""`ToolResultClearing`: old tool results give their room back; the store keeps them, search returns them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.tools import RunContext

from .._vocabulary import SEARCH_TOOL_NAME
from ..text import index_text, tokenize
from ._options import (
    check_below,
    check_count,
    check_fraction,
    check_one_token_trigger,
    check_optional_count,
    check_tokenizer,
    check_window,
    resolve_limit,
)
from ._placeholder import CLEARED_RESULT_KEY, placeholder, query_words
from ._request_hook import CompactBeforeRequest
from ._size import Tokenizer, estimate_message, measure
from ._summary import (
    CORE_COMPACTION,
    TOOL_RESULT_CLEARING_HANDLER,
    cleared_summary,
    compaction_after,
    summary_count,
    with_summary,
    without_summary,
)

if CORE_COMPACTION or TYPE_CHECKING:
    from pydantic_ai.capabilities.compaction import CompactionRequest, CompactionResult

__all__ = ('ToolResultClearing',)

_DEFAULT_KEEP_WITHOUT_COUNT_TRIGGER = 3


@dataclass
class ToolResultClearing(CompactBeforeRequest, AbstractCapability[Any]):
    """Replace old tool results with a placeholder naming the one search call that brings each back.

    For tool-heavy agents, whose context is mostly tool output the model has already read: the
    calls and returns all stay (same tool, same call id, so the history stays valid and the model
    still sees what it did), only the content of old returns shrinks to a short note. The note says
    how long the result was and gives the exact `search_conversation_history` query (the result's
    most distinctive words) that finds it; `StepPersistence` has already stored the full content,
    and `ConversationSearch` shows it verbatim when it is up to 500 characters, or 500 characters
    around the words that match when longer.

    **Batches, for the prompt cache.** Nothing is cleared until a trigger is crossed; then every
    result but the newest `keep_results` is cleared at once, and nothing again until the trigger
    is crossed again. Results in the pending request (not yet seen by the model), results of the
    search tool itself (never indexed, so a placeholder could not bring them back), tools in
    `exclude_tools`, short results (under `min_chars`) and results whose `metadata` is neither
    `None` nor a dict are never cleared.

    Pure, so deterministic in workflow code. Sizes in tokens as for `SlidingWindowCompaction`.

    With pydantic-ai 2.78+ it also answers core's `compact_history` hook (`Agent.compact_history`,
    `RunContext.request_compaction`, the retry after a context overflow), clearing even when no
    trigger is crossed, under the handler id `'durable_recall.tool_result_clearing'`.

    Args:
        max_results: Trigger: clear when more than this many clearable results are uncleared.
        keep_results: Target: how many of the newest results stay whole. Must be below
            `max_results`. Default: half of `max_results`, or 3 without it.
        max_tokens: Trigger: clear when the history measures more tokens than this.
        keep_tokens: Target: clear (oldest first, down to `keep_results`) until the history
            measures at most this many tokens. Must be below `max_tokens`. Default: half the token
            trigger when one is set.
        max_fraction: Trigger: as `max_tokens`, as a fraction of the model's context window
            (exclusive with `max_tokens`; off, with a warning, when the window is unknown).
        context_window: The window `max_fraction` is taken of, when pydantic-ai does not know it.
        tokenizer: Counts a text's tokens, instead of the characters / 4 estimate.
        min_chars: Results shorter than this (as indexed) are not worth a placeholder.
        exclude_tools: Tool names whose results are never cleared.
        id: The capability's id.
    """

    max_results: int | None = 20
    keep_results: int | None = None
    _: KW_ONLY
    max_tokens: int | None = None
    keep_tokens: int | None = None
    max_fraction: float | None = None
    context_window: int | None = None
    tokenizer: Tokenizer | None = None
    min_chars: int = 200
    exclude_tools: frozenset[str] = frozenset()
    id: str | None = 'tool_result_clearing'
    _warned_window: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_optional_count('max_results', self.max_results, 1)
        check_optional_count('keep_results', self.keep_results, 0)
        check_optional_count('max_tokens', self.max_tokens, 1)
        check_optional_count('keep_tokens', self.keep_tokens, 0)
        check_fraction('max_fraction', self.max_fraction)
        check_window(self.context_window)
        check_tokenizer(self.tokenizer)
        check_count('min_chars', self.min_chars, 0)
        if isinstance(self.exclude_tools, str) or not all(
            isinstance(name, str) for name in cast(Sequence[object], self.exclude_tools)
        ):
            raise TypeError(f'exclude_tools must be a collection of tool names, got {self.exclude_tools!r}')
        self.exclude_tools = frozenset(self.exclude_tools)
        if self.max_results is None and self.max_tokens is None and self.max_fraction is None:
            raise ValueError('ToolResultClearing needs a trigger: set max_results, max_tokens or max_fraction')
        check_one_token_trigger(self.max_tokens, self.max_fraction)
        check_below('keep_results', self.keep_results, 'max_results', self.max_results)
        check_below('keep_tokens', self.keep_tokens, 'max_tokens', self.max_tokens)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Its name in an agent spec (YAML or JSON): prefixed, so that it cannot collide with another library's.

        Pinned in a test: specs name it. Every argument is plain data, so the default `from_spec` builds it.
        """
        return 'durable_recall.ToolResultClearing'

    def compact(
        self, messages: Sequence[ModelMessage], *, context_window: int | None = None
    ) -> list[ModelMessage] | None:
        """The history with old results cleared, or `None` when no trigger is crossed or nothing can be cleared.

        Args:
            messages: The history about to be sent; its last message is the pending request.
            context_window: The model's window, for `max_fraction`.
        """
        cleared = self._clear(messages, context_window, forced=False, everything=False)
        return None if cleared is None else cleared[0]

    def _clear(
        self, messages: Sequence[ModelMessage], context_window: int | None, *, forced: bool, everything: bool
    ) -> tuple[list[ModelMessage], list[int], list[str]] | None:
        """The history with results cleared, the changed messages' positions and the cleared results' tools.

        `None` when no trigger is crossed (unless `forced`) or nothing can be cleared. With
        `everything`, every clearable result is cleared, whatever the targets.
        """
        history = list(messages)
        found = [spot for spot in self._uncleared(history)]
        clearable = [spot for spot in found if spot[0] < len(history) - 1]
        sizes = [estimate_message(message, self.tokenizer) for message in history]
        token_limit = resolve_limit(self.max_tokens, self.max_fraction, context_window)
        tokens = measure(history, sizes)
        over_count = self.max_results is not None and len(found) > self.max_results
        over_tokens = token_limit is not None and tokens.total > token_limit
        if not (forced or over_count or over_tokens) or not clearable:
            return None
        keep_results = self.keep_results
        if keep_results is None:
            keep_results = (
                self.max_results // 2 if self.max_results is not None else _DEFAULT_KEEP_WITHOUT_COUNT_TRIGGER
            )
        keep_tokens = self.keep_tokens
        if keep_tokens is None and token_limit is not None:
            keep_tokens = token_limit // 2
        if everything:
            keep_results, keep_tokens = 0, 0
        terms = [set(tokenize(index_text(message))) for message in history]
        size = tokens.overhead + sum(sizes)
        uncleared = len(found)
        changed: list[int] = []
        tools: list[str] = []
        for message_index, part_index in clearable:
            target_met = uncleared <= keep_results and (keep_tokens is None or size <= keep_tokens)
            if target_met and not (forced and not tools):
                break  # a forced clearing clears at least the oldest result
            message = history[message_index]
            assert isinstance(message, ModelRequest)
            others = terms[:message_index] + terms[message_index + 1 :]
            parts = list(message.parts)
            part = cast(ToolReturnPart[Any], parts[part_index])
            parts[part_index] = _cleared(part, others)
            history[message_index] = replace(message, parts=parts)
            new_size = estimate_message(history[message_index], self.tokenizer)
            size += new_size - sizes[message_index]
            sizes[message_index] = new_size
            uncleared -= 1
            changed.append(message_index)
            tools.append(part.tool_name)
        return (history, changed, tools) if changed else None

    if CORE_COMPACTION:

        async def compact_history(self, ctx: RunContext[Any], request: CompactionRequest) -> CompactionResult | None:
            """Answer core's request to compact (`Agent.compact_history`, `request_compaction`, a context overflow).

            Clears even when no trigger is crossed, down to the targets (at least the oldest
            clearable result); for `'context_overflow'`, every clearable result, since the model
            refused the history the targets allowed. The result's `CompactionPart` rides in the
            first request, after its parts (see `durable_recall.compaction._summary`), and names
            the tools whose results were cleared and that search recalls them. `focus` is not
            used: the placeholders already name the query that brings each result back. Returns
            `None` (another capability may compact) when nothing can be cleared, or when a
            message after the first holds another capability's or a provider's `CompactionPart`.
            """
            window = self._window(request.conversation_request.model)
            everything = request.reason == 'context_overflow'
            cleared = self._clear(request.messages, window, forced=True, everything=everything)
            if cleared is None:
                return None
            history, changed, tools = cleared
            first = history[0]
            # Our part rides in the first request, last: any other compaction after it would be later.
            if compaction_after(history[1:] if isinstance(first, ModelRequest) else history):
                return None
            previous = summary_count(first, TOOL_RESULT_CLEARING_HANDLER)
            part = cleared_summary(tools, previous + len(tools))
            if isinstance(first, ModelRequest):
                rest = without_summary(first, TOOL_RESULT_CLEARING_HANDLER)
                holder = replace(first, parts=[part]) if rest is None else with_summary(rest, part)
                messages = [holder, *history[1:]]
            else:
                messages = [ModelRequest(parts=[part]), *history]
            kept_from = len(messages) - (len(history) - 1 - max(changed))
            return CompactionResult(
                messages=messages, part=part, handler=TOOL_RESULT_CLEARING_HANDLER, kept_from=kept_from
            )

    def _uncleared(self, history: Sequence[ModelMessage]) -> list[tuple[int, int]]:
        """(message, part) positions of the results that may be cleared, oldest first."""
        spots: list[tuple[int, int]] = []
        for message_index, message in enumerate(history):
            if not isinstance(message, ModelRequest):
                continue
            for part_index, part in enumerate(message.parts):
                if isinstance(part, ToolReturnPart) and self._may_clear(cast(ToolReturnPart[Any], part)):
                    spots.append((message_index, part_index))
        return spots

    def _may_clear(self, part: ToolReturnPart[Any]) -> bool:
        if part.tool_name == SEARCH_TOOL_NAME or part.tool_name in self.exclude_tools:
            return False
        metadata: object = part.metadata
        if metadata is not None and not isinstance(metadata, dict):
            return False
        if metadata is not None and CLEARED_RESULT_KEY in cast(dict[str, Any], metadata):
            return False
        return len(_indexed(part)) >= self.min_chars


def _indexed(part: ToolReturnPart[Any]) -> str:
    """The result's text as the search index holds it."""
    return index_text(ModelRequest(parts=[part]))


def _cleared(part: ToolReturnPart[Any], others: Sequence[set[str]]) -> ToolReturnPart[Any]:
    """The result with its content replaced by the placeholder, marked so it is not cleared twice."""
    text = _indexed(part)
    query = ' '.join(query_words(text, others))
    metadata = dict(cast(dict[str, Any], part.metadata or {}))
    metadata[CLEARED_RESULT_KEY] = {'chars': len(text), 'query': query}
    return replace(part, content=placeholder(part.tool_name, len(text), query), metadata=metadata)
