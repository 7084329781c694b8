"""A private tool's output never reaches a chat client through the search tool: Vercel AI and AG-UI, end to end.

Each test drives a real `Agent` (a `FunctionModel`) through pydantic-ai's UI adapters, as a chat
server would: the first turn calls a tool marked `ui_visibility='private'`, whose result holds
`TOKEN`; StepPersistence stores it. A later turn of the same conversation searches the history.
Everything the adapter streams to the client (encoded as it would be sent), and the history it
dumps for the client, are checked for `TOKEN`.

Needs pydantic-ai's tool `ui_visibility` (2.78): on an older pydantic-ai the tests skip, and
`test_older_pydantic_ai_behaves_as_before` checks that nothing changed there.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore, StepPersistence
from durable_recall.base import PydanticAIVersionError
from durable_recall.search._withheld import supports_ui_visibility
from durable_recall.text import WITHHELD

pytestmark = [
    pytest.mark.anyio,
    # Each turn sends only its new prompt (the search reads the store), so the adapter's advice to keep
    # the history on the server, for the model's sake, does not apply here.
    pytest.mark.filterwarnings("ignore:A tool's `ui_visibility` keeps its result from the client:UserWarning"),
]

TOKEN = 'tok_ZEBRA_4471'
ACCOUNT = 'QUAGGA-acct'
PRIVATE = f'{TOKEN} for {ACCOUNT}'
"""The private tool's output."""
SEARCH = 'search_conversation_history'

needs_visibility = pytest.mark.skipif(
    not supports_ui_visibility(), reason='tool ui_visibility needs pydantic-ai-slim>=2.78'
)


class Script:
    """Turn 'fetch' calls the private tool; any other prompt is searched for. Records what the search answered."""

    def __init__(self) -> None:
        self.search_answers: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
        if returns:
            if returns[0].tool_name == SEARCH:
                self.search_answers.append(str(returns[0].content))
            return ModelResponse(parts=[TextPart('done')])
        prompt = _last_prompt(messages)
        if prompt == 'fetch':
            return ModelResponse(parts=[ToolCallPart('fetch_token', {'account': ACCOUNT})])
        return ModelResponse(parts=[ToolCallPart(SEARCH, {'query': prompt})])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        """The same turns, streamed (the UI adapters stream the run)."""
        [part] = self(messages, info).parts
        if isinstance(part, TextPart):
            yield part.content
        else:
            assert isinstance(part, ToolCallPart)
            yield {0: DeltaToolCall(name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id='call-1')}


def _last_prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        for part in message.parts:
            if part.part_kind == 'user-prompt' and isinstance(part.content, str):
                return part.content
    raise AssertionError('no prompt')


def build(tmp_path: Path, script: Script, **search: Any) -> Agent[None, str]:
    store = SqliteStepStore(database=tmp_path / 'chat.db')
    agent = Agent(
        FunctionModel(script, stream_function=script.stream),
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation', **search),
        ],
    )

    @agent.tool_plain(ui_visibility='private')
    def fetch_token(account: str) -> str:
        """Fetch an access token for an account."""
        return f'{TOKEN} for {account}'

    return agent


def leaked(text: str, query: str) -> bool:
    """Whether `text` holds anything of the private tool's call or output (beyond the query the client typed)."""
    return any(secret in text for secret in (PRIVATE, '[fetch_token]', 'fetch_token(', *{TOKEN, ACCOUNT} - {query}))


async def _sent(stream: AsyncIterator[str]) -> str:
    return ''.join([chunk async for chunk in stream])


async def vercel_turn(agent: Agent[None, str], prompt: str, conversation_id: str) -> tuple[str, str]:
    """One Vercel AI turn: what is streamed to the client, and the client's view of the run's history."""
    from pydantic_ai.ui.vercel_ai import VercelAIAdapter

    body = {
        'trigger': 'submit-message',
        'id': f'request-{prompt}',
        'messages': [{'id': f'm-{prompt}', 'role': 'user', 'parts': [{'type': 'text', 'text': prompt}]}],
    }
    adapter = VercelAIAdapter(agent=agent, run_input=VercelAIAdapter.build_run_input(json.dumps(body).encode()))
    finished: list[list[ModelMessage]] = []

    async def keep(result: Any) -> None:
        finished.append(result.all_messages())

    sent = await _sent(adapter.encode_stream(adapter.run_stream(conversation_id=conversation_id, on_complete=keep)))
    payload = json.dumps([m.model_dump(mode='json') for m in VercelAIAdapter.dump_messages(finished[0])])
    return sent, payload


async def agui_turn(agent: Agent[None, str], prompt: str, conversation_id: str) -> tuple[str, str]:
    """One AG-UI turn: what is streamed to the client, and the client's view of the run's history."""
    pytest.importorskip('ag_ui', reason='the AG-UI adapter needs ag-ui-protocol (pydantic-ai-slim[ag-ui])')
    from pydantic_ai.ui.ag_ui import AGUIAdapter

    body = {
        'threadId': conversation_id,
        'runId': f'run-{prompt}',
        'state': {},
        'messages': [{'id': f'm-{prompt}', 'role': 'user', 'content': prompt}],
        'tools': [],
        'context': [],
        'forwardedProps': {},
    }
    adapter = AGUIAdapter(agent=agent, run_input=AGUIAdapter.build_run_input(json.dumps(body).encode()))
    finished: list[list[ModelMessage]] = []

    async def keep(result: Any) -> None:
        finished.append(result.all_messages())

    sent = await _sent(adapter.encode_stream(adapter.run_stream(conversation_id=conversation_id, on_complete=keep)))
    payload = json.dumps([m.model_dump(mode='json') for m in AGUIAdapter.dump_messages(finished[0])])
    return sent, payload


TURNS = {'vercel-ai': vercel_turn, 'ag-ui': agui_turn}


@needs_visibility
@pytest.mark.parametrize('adapter', sorted(TURNS))
@pytest.mark.parametrize('query', [TOKEN, ACCOUNT, 'fetch_token'])
async def test_search_never_hands_the_client_a_private_output(tmp_path: Path, adapter: str, query: str) -> None:
    turn = TURNS[adapter]
    script = Script()
    agent = build(tmp_path, script)
    first, _ = await turn(agent, 'fetch', 'chat-1')
    assert TOKEN not in first  # the adapter's own guarantee, for the turn that called the tool

    sent, payload = await turn(agent, query, 'chat-1')
    [answer] = script.search_answers
    assert not leaked(answer, query)
    assert WITHHELD in answer  # the window around the match says something was withheld
    assert not leaked(sent, query) and not leaked(payload, query)
    assert SEARCH in sent and 'withheld' in sent  # the search's output did reach the client, without the token


@needs_visibility
@pytest.mark.parametrize('adapter', sorted(TURNS))
async def test_shown_to_the_model_the_search_goes_private_too(tmp_path: Path, adapter: str) -> None:
    turn = TURNS[adapter]
    script = Script()
    agent = build(tmp_path, script, show_hidden_tools='private')
    await turn(agent, 'fetch', 'chat-2')

    sent, payload = await turn(agent, ACCOUNT, 'chat-2')
    [answer] = script.search_answers
    assert PRIVATE in answer  # the model reads it
    assert not leaked(sent, ACCOUNT) and not leaked(payload, ACCOUNT)  # the client does not
    assert SEARCH not in sent  # a private tool: neither its call nor its result is streamed


@needs_visibility
async def test_redacted_shows_the_search_call_but_not_its_result(tmp_path: Path) -> None:
    script = Script()
    agent = build(tmp_path, script, show_hidden_tools='redacted', hidden_tools={'fetch_token': 'redacted'})
    await vercel_turn(agent, 'fetch', 'chat-3')

    sent, payload = await vercel_turn(agent, ACCOUNT, 'chat-3')
    [answer] = script.search_answers
    # fetch_token is private by its stamp: still withheld, whatever `hidden_tools` says of it.
    assert not leaked(answer, ACCOUNT) and WITHHELD in answer
    assert SEARCH in sent and not leaked(sent, ACCOUNT) and not leaked(payload, ACCOUNT)
    assert 'withheld' not in sent  # redacted: the search's result is replaced by the adapter's placeholder


@needs_visibility
async def test_an_adapters_private_default_is_stamped_and_withheld(tmp_path: Path) -> None:
    from pydantic_ai.ui.vercel_ai import VercelAIAdapter

    script = Script()
    store = SqliteStepStore(database=tmp_path / 'chat.db')
    agent = Agent(
        FunctionModel(script, stream_function=script.stream),
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
        ],
    )

    @agent.tool_plain  # no ui_visibility of its own: the adapter's default applies, and is stamped
    def fetch_token(account: str) -> str:
        return f'{TOKEN} for {account}'

    prompt = {'id': 'm', 'role': 'user', 'parts': [{'type': 'text', 'text': 'fetch'}]}
    body = {'trigger': 'submit-message', 'id': 'r', 'messages': [prompt]}
    run_input = VercelAIAdapter.build_run_input(json.dumps(body).encode())
    adapter = VercelAIAdapter(agent=agent, run_input=run_input, default_ui_visibility='private')
    assert TOKEN not in await _sent(adapter.encode_stream(adapter.run_stream(conversation_id='chat-4')))

    await agent.run(ACCOUNT, conversation_id='chat-4')  # a later turn, outside the adapter
    [answer] = script.search_answers
    assert WITHHELD in answer and not leaked(answer, ACCOUNT)


@pytest.mark.skipif(supports_ui_visibility(), reason='checks a pydantic-ai without tool ui_visibility (2.62)')
async def test_older_pydantic_ai_behaves_as_before(tmp_path: Path) -> None:
    script = Script()
    store = SqliteStepStore(database=tmp_path / 'chat.db')
    agent = Agent(
        FunctionModel(script),
        capabilities=[StepPersistence(store=store), ConversationSearch(SnapshotHistorySource(store), scope='all')],
    )

    @agent.tool_plain
    def fetch_token(account: str) -> str:
        return f'{TOKEN} for {account}'

    await agent.run('fetch', conversation_id='old')
    await agent.run(ACCOUNT, conversation_id='old')
    [answer] = script.search_answers
    assert f'Tool return [fetch_token]: {PRIVATE}' in answer
    with pytest.raises(PydanticAIVersionError, match=r"show_hidden_tools='private'.*2\.78"):
        ConversationSearch(SnapshotHistorySource(store), scope='all', show_hidden_tools='private')
