"""Whether a history is settled: every tool call it makes has been answered, and nothing else."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import CompactionPart, ModelMessage, ModelResponse, ToolCallPart

from ..base import SnapshotState
from ..text import answered_call_id

__all__ = ('snapshot_state',)


def snapshot_state(messages: Sequence[ModelMessage]) -> SnapshotState:
    """`complete` when every tool call is answered exactly once and in order, else `interrupted`.

    A provider rejects a history with an open call or an orphan return, so only a `complete`
    snapshot is one a run could be resumed from.
    """
    open_calls: set[str] = set()
    compacted = False
    for message in messages:
        if isinstance(message, ModelResponse):
            open_calls.update(part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart))
            # A provider's compaction item stands for the history it replaced, calls included: OpenAI's
            # stateless compaction leaves the pending returns after it, and the provider accepts them.
            compacted = compacted or any(
                isinstance(part, CompactionPart) and part.provider_name is not None for part in message.parts
            )
            continue
        for part in message.parts:
            # So does a summary written into a request (core's compaction protocol lets a capability
            # keep only the pending tool returns after it): the calls they answer were summarised.
            compacted = compacted or isinstance(part, CompactionPart)
            call_id = answered_call_id(part)
            if call_id is None:
                continue
            if call_id not in open_calls and not compacted:
                return 'interrupted'
            open_calls.discard(call_id)
    return 'interrupted' if open_calls else 'complete'
