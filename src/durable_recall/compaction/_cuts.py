"""Where a sliding window may cut a history, and the head a compacted history opens with.

A cut drops the messages before it. It may fall only between tool cycles: no call before the cut
may have its return after it (a provider refuses a return whose call it never saw, and core would
drop it). Inside an agent's tool loop that leaves a cut before every model response that follows a
settled step, which is what lets a long single run compact at all.

The kept history must open with a user turn. With the task's first prompt preserved, or a marker
written, the head is that request and the kept part may start at a response. With neither, the
kept part must itself start at a plain user request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart

from ..text import answered_call_id, compaction_marker_count, has_compaction_marker, is_marker_part, marker_request
from ..text import without_marker as _without_marker
from ._summary import SLIDING_WINDOW_HANDLER, summary_count, without_summary

__all__ = ('Split', 'cut_points', 'head_message', 'is_user_request', 'split_history')


@dataclass(frozen=True)
class Split:
    """A history taken apart: the preserved head, the marker's running count, the rest.

    Attributes:
        head: The preserved first user request, without our marker; `None` when none is preserved.
        dropped: How many messages earlier compactions dropped, as the marker (or our core
            compaction's part) says (0 without one).
        body: The messages after the head (and after a marker standing alone).
    """

    head: ModelRequest | None
    dropped: int
    body: list[ModelMessage]


def is_user_request(message: ModelMessage) -> bool:
    """A request carrying a user prompt (not only our marker) and answering no tool call."""
    if not isinstance(message, ModelRequest):
        return False
    if any(answered_call_id(part) is not None for part in message.parts):
        return False
    return any(isinstance(part, UserPromptPart) and not is_marker_part(part) for part in message.parts)


def split_history(messages: Sequence[ModelMessage], *, preserve: bool) -> Split:
    """Take our marker off the first message and, with `preserve`, the first user request off the front.

    A marker stands alone at the head, or carries the preserved prompt, or (written by an earlier
    version, or with `preserve_first_user_message=False`) was merged by core into the prompt that
    followed it. The `CompactionPart` a core compaction of ours wrote rides in the first request
    too, and is taken off it the same way, its running count read as a marker's. Only with
    `preserve` is a prompt next to the marker taken as the preserved head.
    """
    body = list(messages)
    dropped = 0
    if body and has_compaction_marker(body[0]):
        first = body[0]
        assert isinstance(first, ModelRequest)
        dropped = compaction_marker_count(first)
        rest = _without_marker(first)
        body = body[1:] if rest is None else [rest, *body[1:]]
    first = body[0] if body else None
    if isinstance(first, ModelRequest) and without_summary(first, SLIDING_WINDOW_HANDLER) is not first:
        # The part a core compaction wrote counts like a marker; the next compaction writes its own.
        dropped = max(dropped, summary_count(first, SLIDING_WINDOW_HANDLER))
        rest = without_summary(first, SLIDING_WINDOW_HANDLER)
        body = body[1:] if rest is None else [rest, *body[1:]]
    if preserve and body and is_user_request(body[0]):
        first = body[0]
        assert isinstance(first, ModelRequest)
        return Split(first, dropped, body[1:])
    return Split(None, dropped, body)


def cut_points(body: Sequence[ModelMessage], *, needs_request: bool, after_prompt: bool = False) -> list[int]:
    """Every index `i` (at least 1, before the last message) at which `body[i:]` may be kept alone.

    Args:
        body: The messages after the head.
        needs_request: The kept part opens the history itself (no head, no marker), so it must
            start at a plain user request.
        after_prompt: The kept part follows the preserved prompt, so it must start at a response.
            A request there would sit next to the head, and core merges adjacent requests when the
            next run inherits the history: the merged message would be new to the store, and the
            next run's record would hold the preserved prompt (and the merged one) a second time.
    """
    answered = {
        call_id
        for message in body
        if isinstance(message, ModelRequest)
        for part in message.parts
        if (call_id := answered_call_id(part)) is not None
    }
    open_calls: set[str] = set()
    points: list[int] = []
    for index, message in enumerate(body):
        if 0 < index < len(body) and not open_calls and _may_start(message, needs_request, after_prompt):
            points.append(index)
        if isinstance(message, ModelResponse):
            # A call never answered anywhere (an interrupted run's) can never close: it does not block cuts.
            open_calls.update(
                part.tool_call_id
                for part in message.parts
                if isinstance(part, ToolCallPart) and part.tool_call_id in answered
            )
        else:
            open_calls.difference_update(
                call_id for part in message.parts if (call_id := answered_call_id(part)) is not None
            )
    return points


def _may_start(message: ModelMessage, needs_request: bool, after_prompt: bool) -> bool:
    if isinstance(message, ModelResponse):
        return not needs_request
    return not after_prompt and all(answered_call_id(part) is None for part in message.parts)


def head_message(head: ModelRequest | None, dropped: int, *, marker: bool) -> ModelRequest | None:
    """The request a compacted history opens with: the preserved prompt, then our marker counting `dropped`.

    The marker rides in the preserved request rather than in one of its own, so the history keeps
    alternating request and response (core would merge two adjacent requests anyway), and the
    preserved prompt's own parts and metadata are unchanged: without the marker it is the message
    the run persisted first.
    """
    if not marker:
        return head
    note = marker_request(dropped)
    if head is None:
        return note
    return replace(head, parts=[*head.parts, *note.parts])
