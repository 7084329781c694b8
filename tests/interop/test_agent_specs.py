"""Our capabilities declared in a pydantic-ai `AgentSpec` (YAML or JSON), stores given by URL.

An agent built from a spec persists every step, compacts its context and recalls what compaction
dropped, on SQLite and on Postgres. The spec names are compatibility data (specs in the wild name
them), pinned here. Bad arguments fail when the agent is built, naming the value.

pydantic-ai 2.62 has the same spec machinery (`Agent.from_spec`, `custom_capability_types`), so
these run on both supported versions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.agent.spec import AgentSpec
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SlidingWindowCompaction, StepPersistence, ToolResultClearing, open_store
from durable_recall.errors import StoreConfigurationError

pytestmark = pytest.mark.anyio

TYPES = [StepPersistence, ConversationSearch, SlidingWindowCompaction, ToolResultClearing]
SECRET = 'the ZEBRA ledger lives at pg-staging-7.internal:6432/ledger'


def test_spec_names_are_pinned() -> None:
    assert {cls.__name__: cls.get_serialization_name() for cls in TYPES} == {
        'StepPersistence': 'durable_recall.StepPersistence',
        'ConversationSearch': 'durable_recall.ConversationSearch',
        'SlidingWindowCompaction': 'durable_recall.SlidingWindowCompaction',
        'ToolResultClearing': 'durable_recall.ToolResultClearing',
    }


def yaml_spec(url: str) -> str:
    return f"""
name: support
capabilities:
  - durable_recall.StepPersistence:
      store: {url}
      metadata: {{team: billing}}
  - durable_recall.ConversationSearch:
      store: {url}
      scope: conversation
      max_matches: 3
  - durable_recall.SlidingWindowCompaction:
      max_messages: 6
      preserve_first_user_message: false
  - durable_recall.ToolResultClearing:
      max_results: 5
      exclude_tools: [search_conversation_history]
"""


def json_spec(url: str) -> str:
    return json.dumps(
        {
            'name': 'support',
            'capabilities': [
                {'durable_recall.StepPersistence': {'store': url}},
                {'durable_recall.ConversationSearch': {'store': url, 'scope': 'conversation', 'max_matches': 3}},
                {'durable_recall.SlidingWindowCompaction': {'max_messages': 6, 'preserve_first_user_message': False}},
                {'durable_recall.ToolResultClearing': {'max_results': 5}},
            ],
        }
    )


class Script:
    """Chit-chat; 'recall: words' searches for the words. Keeps every context and search answer."""

    def __init__(self) -> None:
        self.contexts: list[list[ModelMessage]] = []
        self.answers: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.contexts.append(list(messages))
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
        if returns:
            self.answers.append(str(returns[0].content))
            return ModelResponse(parts=[TextPart('found it')])
        prompt = next(part.content for part in reversed(last.parts) if part.part_kind == 'user-prompt')
        assert isinstance(prompt, str)
        if prompt.startswith('recall:'):
            return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': prompt[7:].strip()})])
        return ModelResponse(parts=[TextPart(f'noted: {prompt[:30]}')])


async def converse(agent: Agent[Any, Any], script: Script) -> None:
    result = await agent.run(f'remember: {SECRET}', conversation_id='ticket-7')
    history = result.all_messages()
    for turn in range(8):
        result = await agent.run(f'small talk {turn}', message_history=history, conversation_id='ticket-7')
        history = result.all_messages()
    await agent.run('recall: ZEBRA ledger', message_history=history, conversation_id='ticket-7')


def said(messages: list[ModelMessage]) -> str:
    return '\n'.join(str(getattr(part, 'content', '')) for message in messages for part in message.parts)


async def check_recall(spec: AgentSpec, url: str, *, metadata: bool) -> None:
    script = Script()
    agent = Agent.from_spec(spec, model=FunctionModel(script), custom_capability_types=TYPES)
    await converse(agent, script)

    # Compacted: the last request's context no longer holds the detail (but for the search answer).
    assert SECRET not in said(script.contexts[-2])
    # Recalled verbatim from what was persisted.
    [answer] = script.answers
    assert SECRET in answer
    # Persisted: every run of the conversation is in the store the URL names, with the spec's metadata.
    store = open_store(url)
    try:
        runs = await store.list_runs(conversation_id='ticket-7')
        assert len(runs) == 10
        assert {run.agent_name for run in runs} == {'support'}
        assert {dict(run.metadata).get('team') for run in runs} == ({'billing'} if metadata else {None})
    finally:
        aclose = getattr(store, 'aclose', None)
        if aclose is not None:
            await aclose()


async def test_a_yaml_spec_on_sqlite_persists_compacts_and_recalls(tmp_path: Path) -> None:
    url = f'sqlite:///{tmp_path}/chat.db'
    await check_recall(AgentSpec.from_text(yaml_spec(url), fmt='yaml'), url, metadata=True)


async def test_a_yaml_file_on_sqlite(tmp_path: Path) -> None:
    url = f'sqlite:///{tmp_path}/chat.db'
    (tmp_path / 'agent.yaml').write_text(yaml_spec(url))
    await check_recall(AgentSpec.from_file(tmp_path / 'agent.yaml'), url, metadata=True)


async def test_a_json_spec_on_postgres(postgres_database_url: str) -> None:
    spec = AgentSpec.from_text(json_spec(postgres_database_url), fmt='json')
    await check_recall(spec, postgres_database_url, metadata=False)


async def test_a_yaml_spec_on_postgres(postgres_database_url: str) -> None:
    spec = AgentSpec.from_text(yaml_spec(postgres_database_url), fmt='yaml')
    await check_recall(spec, postgres_database_url, metadata=True)


@pytest.mark.parametrize(
    ('capability', 'arguments', 'named'),
    [
        ('durable_recall.StepPersistence', {'store': 42}, 'got 42'),
        ('durable_recall.StepPersistence', {}, 'store'),
        ('durable_recall.StepPersistence', {'store': 'memory:'}, "'memory:'"),
        ('durable_recall.StepPersistence', {'store': 'ftp://x/y'}, "'ftp'"),
        ('durable_recall.StepPersistence', {'store': 'sqlite:///x.db', 'max_batch_steps': 0}, 'max_batch_steps'),
        ('durable_recall.StepPersistence', {'store': 'sqlite:///x.db', 'flush_before_tools': 'abc'}, "'abc'"),
        ('durable_recall.StepPersistence', {'store': 'sqlite:///x.db', 'bogus': 1}, 'bogus'),
        ('durable_recall.ConversationSearch', {'store': 'sqlite:///x.db', 'scope': 'everywhere'}, "'everywhere'"),
        ('durable_recall.ConversationSearch', {'store': 'sqlite:///x.db', 'scope': 'all', 'max_matches': 0}, '0'),
        ('durable_recall.ConversationSearch', {'store': 'sqlite:///x.db', 'scope': 'all', 'embedder': 3}, 'got 3'),
        ('durable_recall.ConversationSearch', {'store': 'sqlite:///x.db', 'source': 'x'}, 'source'),
        ('durable_recall.ConversationSearch', {'store': 'sqlite:///x.db', 'scope': 'all', 'max_match': 3}, 'max_match'),
        ('durable_recall.SlidingWindowCompaction', {'max_messages': -1}, '-1'),
        ('durable_recall.SlidingWindowCompaction', {'max_tokens': 10, 'tokenizer': 'cl100k'}, "'cl100k'"),
        ('durable_recall.ToolResultClearing', {'max_results': 5, 'exclude_tools': 'abc'}, "'abc'"),
    ],
)
def test_bad_arguments_fail_when_the_agent_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capability: str, arguments: dict[str, Any], named: str
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = {'capabilities': [{capability: arguments}]}
    with pytest.raises((ValueError, TypeError, StoreConfigurationError), match=named):
        Agent.from_spec(spec, model='test', custom_capability_types=TYPES)


async def test_the_short_form_names_the_store_alone(tmp_path: Path) -> None:
    url = f'sqlite:///{tmp_path}/chat.db'
    spec = {'name': 'short', 'capabilities': [{'durable_recall.StepPersistence': url}]}
    agent = Agent.from_spec(spec, model='test', custom_capability_types=TYPES)
    await agent.run('hello', conversation_id='short-1')
    store = open_store(url)
    assert [run.agent_name for run in await store.list_runs(conversation_id='short-1')] == ['short']


def test_a_spec_without_our_types_names_them(tmp_path: Path) -> None:
    spec = {'capabilities': [{'durable_recall.StepPersistence': {'store': f'sqlite:///{tmp_path}/x.db'}}]}
    with pytest.raises(ValueError, match='custom_capability_types'):
        Agent.from_spec(spec, model='test')


def test_the_spec_schema_lists_our_capabilities() -> None:
    schema = json.dumps(AgentSpec.model_json_schema_with_capabilities(TYPES))
    for cls in TYPES:
        assert str(cls.get_serialization_name()) in schema
