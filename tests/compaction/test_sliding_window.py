"""SlidingWindowCompaction: options, cuts between tool cycles, hysteresis, the preserved task prompt, the marker.

Changed on purpose from the window this replaced: the default keeps the first user request at the
head (with the marker riding in it) and cuts down to half the trigger, and a cut may now fall
before a model response, so a single run's tool loop compacts. Tests that pinned the old shapes
(a marker standing alone, a window of exactly `max_messages`) now say
`preserve_first_user_message=False` or pass `keep_messages`.
"""

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


def loop(steps: int) -> list[ModelMessage]:
    """One run's tool loop: the task, then a call and its return per step."""
    history: list[ModelMessage] = [prompt('task')]
    for n in range(1, steps + 1):
        history += [call(f'c{n}'), ret(f'c{n}')]
    return history


def task_text(message: ModelMessage) -> str | None:
    assert isinstance(message, ModelRequest)
    rest = without_marker(message)
    assert rest is not None
    first = rest.parts[0]
    assert isinstance(first, UserPromptPart) and isinstance(first.content, str)
    return first.content


class TestOptions:
    @pytest.mark.parametrize('bad', [0, -1, 2.5, True, '3'])
    def test_rejects_a_bad_window(self, bad: Any) -> None:
        with pytest.raises(ValueError, match=f'max_messages must be an int of at least 1, got {bad!r}'):
            SlidingWindowCompaction(max_messages=bad)

    def test_needs_a_trigger(self) -> None:
        with pytest.raises(ValueError, match='needs a trigger: set max_messages, max_tokens or max_fraction'):
            SlidingWindowCompaction()

    @pytest.mark.parametrize(
        ('options', 'message'),
        [
            ({'max_messages': 10, 'keep_messages': 10}, r'keep_messages must be below max_messages \(10\), got 10'),
            ({'max_messages': 10, 'keep_messages': 20}, r'keep_messages must be below max_messages \(10\), got 20'),
            ({'max_tokens': 100, 'keep_tokens': 100}, r'keep_tokens must be below max_tokens \(100\), got 100'),
            ({'max_messages': 10, 'keep_messages': -1}, 'keep_messages must be an int of at least 0, got -1'),
            ({'max_messages': 10, 'keep_messages': 2.5}, 'keep_messages must be an int of at least 0, got 2.5'),
            ({'max_tokens': 0}, 'max_tokens must be an int of at least 1, got 0'),
            ({'max_fraction': 0}, 'max_fraction must be a number above 0 and at most 1, got 0'),
            ({'max_fraction': 1.5}, 'max_fraction must be a number above 0 and at most 1, got 1.5'),
            ({'max_fraction': True}, 'max_fraction must be a number above 0 and at most 1, got True'),
            ({'max_tokens': 10, 'max_fraction': 0.5}, 'set max_tokens or max_fraction, not both'),
            ({'max_fraction': 0.5, 'context_window': 0}, 'context_window must be an int of at least 1, got 0'),
        ],
    )
    def test_rejects_bad_values_naming_them(self, options: dict[str, Any], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            SlidingWindowCompaction(**options)

    @pytest.mark.parametrize('option', ['preserve_first_user_message', 'marker'])
    def test_flags_are_bools(self, option: str) -> None:
        with pytest.raises(TypeError, match=f'{option} must be a bool, got 1'):
            SlidingWindowCompaction(max_messages=4, **{option: 1})  # pyright: ignore[reportArgumentType]

    def test_tokenizer_is_callable(self) -> None:
        with pytest.raises(TypeError, match='tokenizer must be a callable'):
            SlidingWindowCompaction(max_tokens=10, tokenizer='cl100k')  # pyright: ignore[reportArgumentType]

    def test_reference_names_and_order(self) -> None:
        # Drop-in for pydantic-ai-harness's SlidingWindowCompaction: the same names, the same first positions.
        window = SlidingWindowCompaction(80, None, 40)
        assert (window.max_messages, window.keep_messages, window.preserve_first_user_message) == (80, 40, True)
        assert SlidingWindowCompaction.get_serialization_name() == 'durable_recall.SlidingWindowCompaction'
        assert window.id == 'sliding_window_compaction'


class TestToolLoop:
    def test_cuts_between_tool_cycles_and_keeps_the_task(self) -> None:
        history = loop(3)  # 7 messages
        compacted = SlidingWindowCompaction(max_messages=6).compact(history)
        assert compacted is not None
        # Target 3: the task (with the marker) and the newest tool cycle.
        assert task_text(compacted[0]) == 'task'
        assert compaction_marker_count(compacted[0]) == 4
        assert compacted[1:] == history[-2:]
        assert snapshot_state(compacted) == 'complete'

    def test_never_splits_a_call_from_its_return(self) -> None:
        parallel = ModelResponse(parts=[call('a').parts[0], call('b').parts[0]])
        history: list[ModelMessage] = [
            prompt('task'),
            parallel,
            ModelRequest(parts=[*ret('a').parts, *ret('b').parts]),
            call('c'),
            ret('c'),
        ]
        compacted = SlidingWindowCompaction(max_messages=4, keep_messages=1).compact(history)
        assert compacted is not None and compacted[1:] == history[3:]
        assert snapshot_state(compacted) == 'complete'

    def test_waits_for_the_trigger_again_after_a_cut(self) -> None:
        window = SlidingWindowCompaction(max_messages=10, keep_messages=5)
        history = loop(5)  # 11 messages: over
        sizes: list[int] = []
        compacted_at: list[int] = []
        for n in range(6, 30):
            compacted = window.compact(history)
            if compacted is not None:
                compacted_at.append(n)
                history = compacted
            sizes.append(len(history))
            history = [*history, call(f'c{n}'), ret(f'c{n}')]
        assert max(sizes) <= 10
        # Each cut leaves 5 messages; the next comes once 6 more arrived (3 steps of 2).
        assert [b - a for a, b in zip(compacted_at, compacted_at[1:], strict=False)] == [3] * (len(compacted_at) - 1)

    def test_marker_counts_accumulate_in_the_head(self) -> None:
        window = SlidingWindowCompaction(max_messages=6, keep_messages=3)
        first = window.compact(loop(3))
        assert first is not None and compaction_marker_count(first[0]) == 4
        second = window.compact([*first, call('c4'), ret('c4'), call('c5'), ret('c5')])
        assert second is not None
        assert compaction_marker_count(second[0]) == 8
        assert task_text(second[0]) == 'task'
        assert sum(has_compaction_marker(m) for m in second) == 1

    def test_without_a_head_a_loop_cannot_be_cut(self) -> None:
        # No preserved prompt and no marker: the kept part must open with a user prompt itself.
        window = SlidingWindowCompaction(max_messages=4, marker=False, preserve_first_user_message=False)
        assert window.compact(loop(4)) is None

    def test_a_marker_alone_opens_the_history_without_the_task(self) -> None:
        history = loop(3)
        compacted = SlidingWindowCompaction(max_messages=6, preserve_first_user_message=False).compact(history)
        assert compacted is not None
        assert is_compaction_marker(compacted[0]) and compaction_marker_count(compacted[0]) == 5
        assert compacted[1:] == history[-2:]


class TestConversation:
    def test_short_history_is_left_alone(self) -> None:
        history: list[ModelMessage] = [prompt('a'), text('b')]
        assert SlidingWindowCompaction(max_messages=2).compact(history) is None

    def test_keeps_the_first_prompt_and_the_newest_messages(self) -> None:
        history: list[ModelMessage] = [prompt('a'), text('b'), prompt('c'), text('d'), prompt('e')]
        compacted = SlidingWindowCompaction(max_messages=4, keep_messages=3).compact(history)
        assert compacted is not None
        assert task_text(compacted[0]) == 'a' and compaction_marker_count(compacted[0]) == 2
        assert compacted[1:] == history[3:]
        assert COMPACTION_MARKER_KEY == 'durable_recall.compaction.v1'  # compatibility data

    def test_never_starts_the_window_at_a_tool_return(self) -> None:
        history: list[ModelMessage] = [prompt('a'), call('1'), ret('1'), call('2'), ret('2'), text('done'), prompt('b')]
        window = SlidingWindowCompaction(max_messages=4, marker=False, preserve_first_user_message=False)
        assert window.compact(history) == history[-1:]

    def test_grows_back_when_no_later_cut_exists(self) -> None:
        history: list[ModelMessage] = [prompt('a'), text('x'), prompt('b'), call('1'), ret('1'), call('2'), ret('2')]
        window = SlidingWindowCompaction(max_messages=2, marker=False, preserve_first_user_message=False)
        assert window.compact(history) == history[2:]

    def test_an_old_marker_merged_into_a_prompt_is_still_recognised(self) -> None:
        window = SlidingWindowCompaction(max_messages=3, keep_messages=2, preserve_first_user_message=False)
        compacted = window.compact([prompt('a'), text('b'), prompt('c'), text('d')])
        assert compacted is not None and is_compaction_marker(compacted[0])
        marker, kept = compacted[0], compacted[1]
        assert isinstance(marker, ModelRequest) and isinstance(kept, ModelResponse)
        # What core does when a run inherits a marker followed by a prompt: adjacent requests become one.
        merged = ModelRequest(parts=[*marker.parts, *prompt('e').parts])
        again = window.compact([merged, text('f'), prompt('g'), text('h')])
        assert again is not None
        assert compaction_marker_count(again[0]) == 3 + 3  # the merged prompt was a body message: dropped too
        assert sum(has_compaction_marker(m) for m in again) == 1


class TestTokens:
    def test_estimates_until_a_response_reports_usage(self) -> None:
        history = loop(6)  # no usage reported: FunctionModel-free, hand-built
        window = SlidingWindowCompaction(max_tokens=60, keep_tokens=30)
        compacted = window.compact(history)
        assert compacted is not None
        assert task_text(compacted[0]) == 'task'
        assert len(compacted) < len(history)

    def test_reported_input_tokens_drive_the_trigger(self) -> None:
        from pydantic_ai.usage import RequestUsage

        history = loop(2)
        small = SlidingWindowCompaction(max_tokens=1000)
        assert small.compact(history) is None
        last = history[-2]
        assert isinstance(last, ModelResponse)
        history[-2] = ModelResponse(parts=last.parts, usage=RequestUsage(input_tokens=5000, output_tokens=10))
        compacted = small.compact(history)
        assert compacted is not None and compaction_marker_count(compacted[0]) == 2

    def test_max_fraction_uses_the_window_given(self) -> None:
        history = loop(10)
        assert SlidingWindowCompaction(max_fraction=0.5).compact(history, context_window=10_000) is None
        assert SlidingWindowCompaction(max_fraction=0.5).compact(history, context_window=100) is not None


class TestOnAnAgent:
    async def test_history_stays_bounded_and_valid(self) -> None:
        agent = Agent(scripted_model(), capabilities=[SlidingWindowCompaction(max_messages=7)])
        agent.tool_plain(read_file)
        history: list[ModelMessage] | None = None
        for turn in range(6):
            result = await agent.run(f'turn {turn}', message_history=history)
            history = result.all_messages()
            assert len(history) <= 7 + 1  # bounded before each request, plus this turn's final answer
            assert snapshot_state(history) == 'complete'
        assert history is not None
        assert compaction_marker_count(history[0]) > 0
        assert task_text(history[0]) == 'turn 0'

    async def test_max_fraction_reads_the_models_context_window(self) -> None:
        from pydantic_ai.models.function import FunctionModel

        from ._loop import LoopModel, step

        script = LoopModel(steps=30, recall=False)
        model = FunctionModel(script, model_name='loop', profile={'context_window': 400})
        agent = Agent(model, capabilities=[SlidingWindowCompaction(max_fraction=0.5)])
        agent.tool_plain(step)
        await agent.run('TASK: audit the ledger, one step at a time')
        assert max(len(view) for view in script.views) < 61

    async def test_an_unknown_window_warns_once_and_leaves_the_history(self) -> None:
        from pydantic_ai.models.function import FunctionModel

        from ._loop import LoopModel, step

        script = LoopModel(steps=5, recall=False)
        agent = Agent(
            FunctionModel(script, model_name='unknown-model'), capabilities=[SlidingWindowCompaction(max_fraction=0.1)]
        )
        agent.tool_plain(step)
        with pytest.warns(UserWarning, match="cannot tell the context window of model 'unknown-model'") as caught:
            await agent.run('TASK: audit the ledger, one step at a time')
        assert len(caught) == 1
        assert len(script.views[-1]) == 11


def test_only_requests_after_the_preserved_prompt_still_trim() -> None:
    # Five 10-token user requests (40 characters each), no response between them: no cut can start
    # at a response, which once meant the window never trimmed, however far over the trigger.
    requests = [prompt(f'PROMPT{n} ' + 'x' * 32) for n in range(1, 6)]
    compaction = SlidingWindowCompaction(max_tokens=10, keep_messages=2)
    compacted = compaction.compact(requests)
    assert compacted is not None
    assert len(compacted) == 2
    assert task_text(compacted[0]) == 'PROMPT1 ' + 'x' * 32  # the preserved first prompt, marked
    assert compaction_marker_count(compacted[0]) == 3
    assert compacted[1] is requests[-1]
