"""Display lines from stored JSON (`prepare_stored`) equal `display_lines` on the decoded message, always.

The fast path may decline a shape (it then gives `None` and the caller decodes with pydantic-ai);
where it accepts one, its lines must be the pydantic path's exactly, under any query and any
skipped tools. Generated messages cover every part shape and oddity the renderer branches on;
the benchmark generators' messages are what real agent histories look like.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Literal, cast

from benchmarks._chat import generate_chat
from benchmarks._script import Conversation, generate_conversation, response_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import PydanticAIDeprecationWarning
from pydantic_ai import messages as m

from durable_recall.base import dump_messages, load_messages
from durable_recall.text import (
    DEFAULT_SKIP_TOOLS,
    HARNESS_LEGACY_SUMMARY_PREFIX,
    HARNESS_RECEIPT_TAG,
    HARNESS_SUMMARY_KEY,
    display_lines,
    marker_request,
    tokenize,
)
from durable_recall.text._stored import prepare_stored, stored_lines

from ..stores._all_parts import every_part_conversation

WORDS = ['paris', 'Weather', 'zebra', 'é', 'Straße', 'x' * 30, '', ' ', '\n', 'read_file', 'ünïcödé']
NO_OUTPUT: m.RetryInfo[Literal['no_output']] = m.RetryInfo('no_output', attempt=1)
LONG = 'lots of words ' * 30
TOOLS = ['get_weather', 'read_file', 'search_history', 'other']


def check(message: m.ModelMessage, terms: list[str], skip: frozenset[str], rarity: dict[str, float] | None) -> bool:
    """Assert the fast path agrees with the pydantic path on `message`; whether it took the message."""
    [body] = dump_messages([message])
    [decoded] = load_messages([body])
    prepared = prepare_stored(body)
    if prepared is None:
        return False
    expected = display_lines(decoded, terms, rarity=rarity, skip_tools=skip)
    assert stored_lines(prepared, terms, rarity=rarity, skip_tools=skip) == expected, body
    return True


text = (
    st.lists(st.sampled_from(WORDS), max_size=20).map(' '.join)
    | st.lists(st.sampled_from(WORDS), min_size=40, max_size=150).map(' '.join)  # past the display limits
    | st.text(max_size=40)
)
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(['a', 'kind', 'ctx', 'path']), inner),
    max_leaves=12,
)
metadata = st.none() | st.just(HARNESS_RECEIPT_TAG) | st.dictionaries(st.sampled_from(['source', 'x']), json_leaf)
user_item: st.SearchStrategy[Any] = (
    text
    | st.builds(m.TextContent, content=text, metadata=metadata)
    | st.builds(m.StructuredContent, value=json_value, tag=st.just('t'))
    | st.builds(m.ImageUrl, url=st.just('https://example.com/a.png'))
    | st.builds(m.BinaryContent, data=st.binary(max_size=8), media_type=st.just('image/png'))
    | st.just(m.CachePoint())
)
args = (
    st.none()
    | st.dictionaries(st.sampled_from(['path', 'query', 'n']), json_value, max_size=3)
    | json_value.map(json.dumps)
    | text
)
request_part: st.SearchStrategy[Any] = st.one_of(
    st.builds(m.UserPromptPart, content=text),
    st.builds(m.UserPromptPart, content=st.lists(user_item, max_size=4)),
    st.builds(m.SystemPromptPart, content=text | text.map(HARNESS_LEGACY_SUMMARY_PREFIX.__add__)),
    st.builds(
        m.ToolReturnPart,
        tool_name=st.sampled_from(TOOLS),
        content=json_value,
        tool_call_id=st.just('c1'),
        outcome=st.sampled_from(['success', 'failed', 'denied', 'interrupted', 'retried']),
        retry=st.none(),
    ),
    st.builds(m.RetryFeedbackPart, content=text, retry=st.just(NO_OUTPUT)),
    st.builds(
        m.CompactionPart,
        content=st.none() | text,
        metadata=st.none() | st.just({HARNESS_SUMMARY_KEY: True}) | st.just({HARNESS_SUMMARY_KEY: 1}),
    ),
    st.builds(m.SpeechPart, speaker=st.just('user'), transcript=st.none() | text),
    st.builds(m.InstructionDeltaPart, content=st.none() | text),
    st.builds(m.ModelSettingsDeltaPart, settings=st.just({'temperature': 0.5})),
)
response_part: st.SearchStrategy[Any] = st.one_of(
    st.builds(m.TextPart, content=text),
    st.builds(m.ToolCallPart, tool_name=st.sampled_from(TOOLS), args=args, tool_call_id=st.just('c1')),
    st.builds(m.ThinkingPart, content=text),
    st.builds(m.SpeechPart, speaker=st.just('assistant'), transcript=st.none() | text),
    st.builds(m.CompactionPart, content=text),
)
messages: st.SearchStrategy[m.ModelMessage] = st.builds(
    m.ModelRequest, parts=st.lists(request_part, max_size=4)
) | st.builds(m.ModelResponse, parts=st.lists(response_part, max_size=4))
queries = st.lists(st.sampled_from(['paris', 'zebra', 'weather', 'strasse', 'read_file', 'x' * 30, 'none']), max_size=3)
skips = st.sampled_from([DEFAULT_SKIP_TOOLS, frozenset({'get_weather'}), frozenset[str]()])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=messages, terms=queries, skip=skips, rare=st.booleans())
def test_stored_lines_equal_display_lines(
    message: m.ModelMessage, terms: list[str], skip: frozenset[str], rare: bool
) -> None:
    rarity = {term: float(len(term)) for term in terms} if rare else None
    check(message, terms, skip, rarity)


def test_ordinary_messages_take_the_fast_path() -> None:
    """So the comparison above is not vacuous: plain prompts, replies, calls and returns are prepared."""
    ordinary: list[m.ModelMessage] = [
        m.ModelRequest(parts=[m.SystemPromptPart('Be brief.'), m.UserPromptPart('weather in paris?')]),
        m.ModelRequest(parts=[m.UserPromptPart(['see', m.TextContent('this'), m.ImageUrl('https://x.org/a.png')])]),
        m.ModelResponse(parts=[m.ThinkingPart('hmm'), m.TextPart('Looking.'), m.ToolCallPart('get_weather', {'c': 1})]),
        m.ModelResponse(parts=[m.ToolCallPart('read_file', '{"path": "a.py"}'), m.ToolCallPart('x', 'not json')]),
        m.ModelRequest(parts=[m.ToolReturnPart('get_weather', {'temp': 21.5, 'sky': ['clear']}, 'c')]),
        m.ModelRequest(parts=[m.ToolReturnPart('get_weather', 'city is required', 'c', outcome='retried')]),
        m.ModelRequest(parts=[m.ToolReturnPart('search_history', 'found', 'c')]),
        m.ModelRequest(parts=[m.CompactionPart(content='earlier: paris')]),
        m.ModelRequest(parts=[m.UserPromptPart([m.TextContent('gone', metadata=HARNESS_RECEIPT_TAG)])]),
        m.ModelRequest(parts=[m.SystemPromptPart(HARNESS_LEGACY_SUMMARY_PREFIX + 'old summary')]),
        m.ModelRequest(parts=[m.CompactionPart(content='s', metadata={HARNESS_SUMMARY_KEY: True})]),
        marker_request(3),
        m.ModelRequest(parts=[m.SystemPromptPart(LONG + 'paris'), m.UserPromptPart(LONG + 'paris ' + LONG)]),
        m.ModelResponse(parts=[m.TextPart(LONG + 'paris'), m.ToolCallPart('t', {'a': LONG + 'paris ' + LONG})]),
        m.ModelRequest(
            parts=[
                m.ToolReturnPart('t', [LONG, {'k': 'paris ' + LONG}], 'c'),
                m.InstructionDeltaPart(id=None, content=LONG),
            ]
        ),
    ]
    for message in ordinary:
        assert check(message, ['paris'], DEFAULT_SKIP_TOOLS, None), message


def test_every_part_shape_agrees_or_falls_back() -> None:
    """Each part of the conversation that holds every part class, alone in its message."""
    taken = 0
    for message in every_part_conversation():
        for part in cast(list[Any], message.parts):
            single = m.ModelRequest(parts=[part]) if message.kind == 'request' else m.ModelResponse(parts=[part])
            for skip in (DEFAULT_SKIP_TOOLS, frozenset({'get_weather'})):
                taken += check(single, ['paris', 'weather'], skip, None)
    assert taken > 20


def test_shapes_it_does_not_know_fall_back() -> None:
    """Unknown parts, legacy retries, typed tool parts, media in a return and odd JSON give `None`."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', PydanticAIDeprecationWarning)
        legacy = m.RetryPromptPart(content='again', tool_name='get_weather')  # pyright: ignore[reportDeprecated]
    declined = [
        m.ModelRequest(parts=[legacy]),
        m.ModelRequest(parts=[m.ToolReturnPart('t', [m.ImageUrl('https://x.org/a.png')], 'c')]),
        m.ModelRequest(
            parts=[
                m.RetryFeedbackPart(
                    content=[{'type': 'missing', 'loc': ('a',), 'msg': 'm', 'input': 1}], retry=NO_OUTPUT
                )
            ]
        ),
        m.ModelResponse(parts=[m.ToolCallPart('search_tools', {'queries': ['x']}, 'c', tool_kind='tool-search')]),
    ]
    for message in declined:
        [body] = dump_messages([message])
        assert prepare_stored(body) is None, body
    for body in ['', 'not json', '[]', '{"kind": "request"}', '{"kind": "other", "parts": []}', '{"parts": [NaN]}']:
        assert prepare_stored(body) is None, body


def test_a_later_releases_part_kind_is_shown_generically() -> None:
    """A part kind no pydantic-ai this knows writes: its text, from its JSON, as the object path shows it."""
    unknown = (
        '{"kind":"request","parts":[{"part_kind":"from-the-future","content":"ZEBRA seen",'
        '"id":"f-1","timestamp":"2026-01-01T00:00:00Z","details":{"note":"striped"}}]}'
    )
    prepared = prepare_stored(unknown)
    assert prepared is not None
    lines = stored_lines(prepared, ['zebra'], skip_tools=DEFAULT_SKIP_TOOLS)
    assert lines == ['Part [from-the-future]: ZEBRA seen\nstriped']
    response = '{"kind":"response","parts":[{"part_kind":"hologram","caption":"a ZEBRA"}]}'
    prepared = prepare_stored(response)
    assert prepared is not None
    assert stored_lines(prepared, ['zebra'], skip_tools=()) == ['Part [hologram]: a ZEBRA']


def _script_messages(conversation: Conversation) -> list[m.ModelMessage]:
    out: list[m.ModelMessage] = []
    for run in conversation.runs:
        out.append(m.ModelRequest(parts=[m.UserPromptPart(run.prompt)]))
        for step in run.steps:
            out.append(response_for(step))
            if step.calls:
                returns = [m.ToolReturnPart(call.tool, call.result, call.call_id) for call in step.calls]
                out.append(m.ModelRequest(parts=returns))
    return out


def test_benchmark_messages_agree() -> None:
    """The long-runs and chat generators' messages: every one takes the fast path and agrees."""
    conversations = [generate_conversation(7, 300, conversation_id='c'), generate_chat(7, 60)]
    for conversation in conversations:
        history = _script_messages(conversation)
        words = sorted({term for message in history[:40] for term in tokenize(str(message))})[:200]
        for index, message in enumerate(history):
            terms = words[index % 50 : index % 50 + 3]
            assert check(message, terms, DEFAULT_SKIP_TOOLS, {term: len(term) / 3 for term in terms}), message


def test_sliding_window_marker_is_known() -> None:
    """The marker `SlidingWindowCompaction` writes shows as nothing on both paths."""
    assert check(marker_request(12), ['messages'], DEFAULT_SKIP_TOOLS, None)
