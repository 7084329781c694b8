"""Answers withhold the calls and returns of tools marked private or redacted, on both render paths.

The render paths (pydantic-ai objects, `display_lines`; stored JSON, `stored_lines`) must agree
under every visibility stamp and every policy; a search must not show, or point at, what it
withholds; the options are checked at construction.
"""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai import messages as m
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore, StepPersistence
from durable_recall.base import dump_messages, load_messages
from durable_recall.search._withheld import skip_tools_for, supports_ui_visibility
from durable_recall.text import DEFAULT_SKIP_TOOLS, WITHHELD, SkipTools, display_lines, index_text
from durable_recall.text._stored import prepare_stored, stored_lines

pytestmark = pytest.mark.anyio

needs_visibility = pytest.mark.skipif(
    not supports_ui_visibility(), reason='tool ui_visibility stamps need pydantic-ai-slim>=2.78'
)

STAMPS = [None, 'public', 'redacted', 'private']
POLICIES = [
    DEFAULT_SKIP_TOOLS,
    skip_tools_for(None, {}),
    skip_tools_for('redacted', {}),
    skip_tools_for('private', {}),
    skip_tools_for(None, {'get_weather': 'redacted'}),
    skip_tools_for('redacted', {'get_weather': 'private', 'search_conversation_history': 'private'}),
]


def stamped(part: Any, stamp: str | None) -> Any:
    return part if stamp is None else replace(part, ui_visibility=stamp)


def exchange(tool: str, call_stamp: str | None, return_stamp: str | None) -> list[ModelMessage]:
    call = stamped(ToolCallPart(tool, {'city': 'ZEBRA-town'}, tool_call_id='c1'), call_stamp)
    back = stamped(ToolReturnPart(tool, 'ZEBRA sunny 31C', tool_call_id='c1'), return_stamp)
    return [
        ModelResponse(parts=[TextPart('checking'), call]),
        ModelRequest(parts=[back, m.UserPromptPart('and tomorrow?')]),
    ]


def check(message: ModelMessage, skip: frozenset[str]) -> list[str]:
    [body] = dump_messages([message])
    [decoded] = load_messages([body])
    prepared = prepare_stored(body)
    assert prepared is not None, body
    expected = display_lines(decoded, ['zebra'], skip_tools=skip)
    assert stored_lines(prepared, ['zebra'], skip_tools=skip) == expected, body
    return expected


@given(
    tool=st.sampled_from(['get_weather', 'read_file', 'search_conversation_history']),
    call_stamp=st.sampled_from(STAMPS),
    return_stamp=st.sampled_from(STAMPS),
    skip=st.sampled_from(POLICIES),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_both_render_paths_withhold_alike(
    tool: str, call_stamp: str | None, return_stamp: str | None, skip: frozenset[str]
) -> None:
    if not supports_ui_visibility() and (call_stamp or return_stamp):
        return  # an older pydantic-ai has no stamp to set
    call, back = exchange(tool, call_stamp, return_stamp)
    for message, stamp, label in ((call, call_stamp, 'Tool call'), (back, return_stamp, 'Tool return')):
        joined = '\n'.join(check(message, skip))
        withheld = isinstance(skip, SkipTools) and skip.hides(tool, stamp)
        shown = tool not in skip and not withheld
        assert (label in joined) == shown and ('ZEBRA' in joined) == shown
        assert (WITHHELD in joined) == (tool not in skip and withheld)


@needs_visibility
@pytest.mark.parametrize('stamp', ['redacted', 'private'])
def test_a_withheld_part_shows_one_line_in_its_place(stamp: str) -> None:
    call, back = exchange('get_weather', stamp, stamp)
    assert check(call, skip_tools_for(None, {})) == ['Assistant: checking', WITHHELD]
    assert check(back, skip_tools_for(None, {})) == [WITHHELD, 'User: and tomorrow?']
    assert index_text(back, skip_tools=skip_tools_for(None, {})) == 'and tomorrow?'
    # Shown when the option reaches that far, and always to the operator's plain set of names.
    assert 'Tool return [get_weather]: ZEBRA sunny 31C' in check(back, skip_tools_for('private', {}))
    assert 'Tool return [get_weather]: ZEBRA sunny 31C' in check(back, DEFAULT_SKIP_TOOLS)
    assert WITHHELD in check(back, skip_tools_for('redacted', {})) if stamp == 'private' else True


def test_unstamped_parts_are_withheld_by_name() -> None:
    call, back = exchange('get_weather', None, None)
    by_name = skip_tools_for(None, {'get_weather': 'private'})
    assert check(call, by_name) == ['Assistant: checking', WITHHELD]
    assert check(back, by_name) == [WITHHELD, 'User: and tomorrow?']
    assert 'ZEBRA' in '\n'.join(check(back, skip_tools_for(None, {'other_tool': 'private'})))


def test_the_policy_is_a_value() -> None:
    a, b = skip_tools_for(None, {}), skip_tools_for('private', {})
    assert a == skip_tools_for(None, {}) and hash(a) == hash(skip_tools_for(None, {}))
    assert a != b and a != DEFAULT_SKIP_TOOLS and set(a) == set(DEFAULT_SKIP_TOOLS)
    assert pickle.loads(pickle.dumps(b)) == b
    with pytest.raises(ValueError, match="'secret'"):
        SkipTools(withheld=['secret'])


@pytest.mark.parametrize(
    ('options', 'error', 'named'),
    [
        ({'show_hidden_tools': 'everything'}, ValueError, "'everything'"),
        ({'show_hidden_tools': True}, ValueError, 'True'),
        ({'hidden_tools': {'fetch': 'public'}}, ValueError, r"hidden_tools\['fetch'\].*'public'"),
        ({'hidden_tools': {'': 'private'}}, TypeError, "''"),
        ({'hidden_tools': ['fetch']}, TypeError, r"\['fetch'\]"),
    ],
)
def test_bad_options_are_refused_by_name(tmp_path: Path, options: dict[str, Any], error: type, named: str) -> None:
    store = SqliteStepStore(database=tmp_path / 's.db')
    with pytest.raises(error, match=named):
        ConversationSearch(SnapshotHistorySource(store), scope='all', **options)


@needs_visibility
@pytest.mark.parametrize('show', [None, 'redacted', 'private'])
def test_the_search_tool_takes_the_strictest_visibility_it_may_show(tmp_path: Path, show: str | None) -> None:
    store = SqliteStepStore(database=tmp_path / 's.db')
    search = ConversationSearch(SnapshotHistorySource(store), scope='all', show_hidden_tools=show)  # pyright: ignore[reportArgumentType]
    tool_def: Any = search.get_toolset().tools['search_conversation_history'].tool_def
    assert tool_def.ui_visibility == show


class Recall:
    """'fetch' calls the tool; 'recall' searches for the query it was built with."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.answers: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
        if returns:
            if returns[0].tool_name == 'search_conversation_history':
                self.answers.append(str(returns[0].content))
            return ModelResponse(parts=[TextPart('done')])
        prompt = next(part.content for part in last.parts if isinstance(part, m.UserPromptPart))
        if prompt == 'fetch':
            return ModelResponse(parts=[ToolCallPart('fetch_token', {'account': 'acct-1'})])
        return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': self.query})])


async def recall(tmp_path: Path, query: str, *, marked: bool, **options: Any) -> str:
    store = SqliteStepStore(database=tmp_path / f'{query}-{marked}-{sorted(options.items())}.db')
    script = Recall(query)
    agent = Agent(
        FunctionModel(script),
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation', **options),
        ],
    )
    marks: dict[str, Any] = {'ui_visibility': 'private'} if marked else {}

    @agent.tool_plain(**marks)
    def fetch_token(account: str) -> str:
        return f'OKAPI-secret-77 for {account}'

    await agent.run('fetch', conversation_id='c')
    await agent.run('recall', conversation_id='c')
    [answer] = script.answers
    return answer


@needs_visibility
async def test_a_match_only_in_withheld_output_is_not_shown(tmp_path: Path) -> None:
    answer = await recall(tmp_path, 'OKAPI', marked=True)
    assert answer.startswith("No matches for 'OKAPI'") and 'OKAPI-secret' not in answer
    shown = await recall(tmp_path, 'OKAPI', marked=True, show_hidden_tools='private')
    assert 'Tool return [fetch_token]: OKAPI-secret-77 for acct-1' in shown


async def test_hidden_tools_withhold_unstamped_history_on_any_pydantic_ai(tmp_path: Path) -> None:
    answer = await recall(tmp_path, 'OKAPI', marked=False, hidden_tools={'fetch_token': 'private'})
    assert answer.startswith("No matches for 'OKAPI'")
    context = await recall(tmp_path, 'done', marked=False, hidden_tools={'fetch_token': 'private'})
    assert WITHHELD in context and 'OKAPI' not in context and 'acct-1' not in context
    assert 'OKAPI-secret-77' in await recall(tmp_path, 'OKAPI', marked=False)  # as before, without the option
