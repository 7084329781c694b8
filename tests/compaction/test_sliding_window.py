"""SlidingWindowCompaction: the window, the tool-call pairing rule, the marker."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from durable_recall import SlidingWindowCompaction
from durable_recall.compaction import (
    COMPACTION_MARKER_KEY,
    compaction_marker_count,
    has_compaction_marker,
    is_compaction_marker,
    without_marker,
)
from durable_recall.persistence import snapshot_state
from tests._scripted import read_file, scripted_model

pytestmark = pytest.mark.anyio


def prompt(text: str) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=text)])


def call(call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart('read_file', {'path': call_id}, tool_call_id=call_id)])


def ret(call_id: str) -> ModelRequest:
    return ModelRequest(parts=[ToolReturnPart('read_file', 'ok', tool_call_id=call_id)])


def text(value: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(value)])


class TestWindow:
    def test_short_history_is_left_alone(self) -> None:
        history: list[ModelMessage] = [prompt('a'), text('b')]
        assert SlidingWindowCompaction(max_messages=2).compact(history) is None

    def test_keeps_the_newest_messages_behind_a_marker(self) -> None:
        history: list[ModelMessage] = [prompt('a'), text('b'), prompt('c'), text('d'), prompt('e')]
        compacted = SlidingWindowCompaction(max_messages=3).compact(history)
        assert compacted is not None
        assert compacted[1:] == history[2:]
        assert is_compaction_marker(compacted[0])
        assert compaction_marker_count(compacted[0]) == 2
        assert 'search_conversation_history' in str(compacted[0])

    def test_never_starts_the_window_at_a_tool_return(self) -> None:
        history: list[ModelMessage] = [prompt('a'), call('1'), ret('1'), call('2'), ret('2'), text('done'), prompt('b')]
        compacted = SlidingWindowCompaction(max_messages=4, marker=False).compact(history)
        # The window of 4 would start at ret('1'); the cut moves forward to the next plain request.
        assert compacted == history[-1:]
        assert compacted is not None and snapshot_state(compacted) == 'complete'

    def test_grows_back_when_no_later_cut_exists(self) -> None:
        history: list[ModelMessage] = [prompt('a'), text('x'), prompt('b'), call('1'), ret('1'), call('2'), ret('2')]
        compacted = SlidingWindowCompaction(max_messages=2, marker=False).compact(history)
        assert compacted == history[2:]

    def test_marker_counts_accumulate(self) -> None:
        window = SlidingWindowCompaction(max_messages=2)
        first = window.compact([prompt('a'), text('b'), prompt('c'), text('d')])
        assert first is not None
        newest: list[ModelMessage] = [prompt('e'), text('f')]
        second = window.compact([*first, *newest])
        assert second is not None
        assert compaction_marker_count(second[0]) == 4
        assert second[1:] == newest
        assert sum(is_compaction_marker(m) for m in second) == 1

    def test_marker_metadata_key_is_pinned(self) -> None:
        # Compatibility data: search recognises the marker by this key in stored histories.
        assert COMPACTION_MARKER_KEY == 'durable_recall.compaction.v1'

    @pytest.mark.parametrize('bad', [0, -1, 2.5, True, '3'])
    def test_rejects_a_bad_window(self, bad: Any) -> None:
        with pytest.raises(ValueError, match=f'max_messages must be an int of at least 1, got {bad!r}'):
            SlidingWindowCompaction(max_messages=bad)


class TestOnAnAgent:
    async def test_history_stays_bounded_and_valid(self) -> None:
        agent = Agent(scripted_model(), capabilities=[SlidingWindowCompaction(max_messages=5)])
        agent.tool_plain(read_file)
        history: list[ModelMessage] | None = None
        for turn in range(6):
            result = await agent.run(f'turn {turn}', message_history=history)
            history = result.all_messages()
            body = [m for m in history if not is_compaction_marker(m)]
            assert len(body) <= 5 + 2  # the window, plus this turn's final response and its request
            assert snapshot_state(history) == 'complete'
        assert history is not None
        assert compaction_marker_count(history[0]) > 0


class TestMergedMarker:
    def test_a_marker_core_merged_into_the_next_prompt_is_still_recognised(self) -> None:
        window = SlidingWindowCompaction(max_messages=2)
        compacted = window.compact([prompt('a'), text('b'), prompt('c'), text('d')])
        assert compacted is not None
        marker, kept_prompt = compacted[0], compacted[1]
        assert isinstance(marker, ModelRequest) and isinstance(kept_prompt, ModelRequest)
        # What core does when the next run inherits the history: adjacent requests become one.
        merged = ModelRequest(parts=[*marker.parts, *kept_prompt.parts])
        assert has_compaction_marker(merged) and not is_compaction_marker(merged)
        assert compaction_marker_count(merged) == 2
        again = window.compact([merged, *compacted[2:], prompt('e'), text('f')])
        assert again is not None
        assert compaction_marker_count(again[0]) == 4
        assert sum(has_compaction_marker(m) for m in again) == 1

    def test_without_marker_keeps_the_prompt(self) -> None:
        marked = SlidingWindowCompaction(max_messages=1).compact([prompt('a'), text('b'), prompt('c')])
        assert marked is not None
        head, kept = marked[0], marked[1]
        assert isinstance(head, ModelRequest) and isinstance(kept, ModelRequest)
        rest = without_marker(ModelRequest(parts=[*head.parts, *kept.parts]))
        assert rest is not None and rest.parts == kept.parts
