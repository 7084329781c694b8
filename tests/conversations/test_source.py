"""`ConversationStoreSource`: `ConversationSearch` over what any conversation store holds."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore, InMemoryConversationStore
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, HistorySource
from durable_recall.conversations import ConversationStoreSource

from ._helpers import echo_agent

pytestmark = pytest.mark.anyio

SECRET = 'the export bucket is s3://acme-prod/exports/ZEBRA-ledger-2026q1.parquet'


class RecallModel:
    """Chats; a prompt `recall: <query>` makes it search, and it quotes what the tool returned."""

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
            return ModelResponse(parts=[TextPart(f'From the history: {returns[0].content}')])
        prompt = next(part.content for part in reversed(last.parts) if isinstance(part, UserPromptPart))
        assert isinstance(prompt, str)
        if prompt.startswith('recall:'):
            query = prompt.removeprefix('recall:').strip()
            return ModelResponse(parts=[ToolCallPart('search_conversation_history', {'query': query})])
        return ModelResponse(parts=[TextPart(f'ok, noted: {prompt[:30]}')])


async def _turn(store: ConversationStore, agent: Agent[None, str], cid: str, prompt: str, limit: int) -> None:
    conversation = await store.load(cid, limit=limit) or Conversation(conversation_id=cid)
    await store.save(await agent.run(prompt, conversation=conversation))


async def test_search_recalls_what_limit_loads_stopped_sending(conversation_store: ConversationStore) -> None:
    store = conversation_store
    model = RecallModel()
    agent = Agent(
        FunctionModel(model),
        name='support',
        capabilities=[ConversationSearch(ConversationStoreSource(store), scope='conversation')],
    )
    await _turn(store, agent, 'ticket-42', f'remember: {SECRET}', limit=6)
    for turn in range(12):
        await _turn(store, agent, 'ticket-42', f'small talk number {turn}', limit=6)
    await _turn(store, agent, 'ticket-7', 'a different customer entirely', limit=6)

    await _turn(store, agent, 'ticket-42', 'recall: export bucket ZEBRA ledger', limit=6)
    sent = ' '.join(str(message) for message in model.contexts[-2])  # what the recall turn's request carried
    assert 'ZEBRA' not in sent.replace('recall: export bucket ZEBRA ledger', '')
    assert 's3://acme-prod/exports/ZEBRA-ledger-2026q1.parquet' in model.answers[-1]

    await _turn(store, agent, 'ticket-7', 'recall: export bucket ZEBRA ledger', limit=6)
    assert 's3://' not in model.answers[-1] and model.answers[-1].startswith('No matches')


async def test_every_message_once_and_branches_are_runs_of_their_own() -> None:
    store = InMemoryConversationStore()
    agent = echo_agent()
    conversation = Conversation(conversation_id='c-1')
    for prompt in ['alpha', 'bravo']:
        result = await agent.run(prompt, conversation=await store.load('c-1') or conversation)
        await store.save(result)
    loaded = await store.load('c-1')
    assert loaded is not None
    branched = await store.branch('c-1', at=2, expected_revision=loaded.revision)
    await store.save(await agent.run('charlie', conversation=branched))

    source = ConversationStoreSource(store)
    assert isinstance(source, HistorySource)
    runs = await source.list_runs(conversation_id='c-1')
    live = await source.run_history('c-1')
    record = await store.read_record('c-1')
    assert live is not None and record is not None
    branch_id = f'c-1#branch:{record.branches[0]}'
    assert [run.run_id for run in runs] == ['c-1', branch_id]  # oldest first message first
    branch = await source.run_history(branch_id)
    assert branch is not None
    assert len(live.messages) == 4 and len(branch.messages) == 2  # the shared prefix only in the live run
    assert 'bravo' in str(branch.messages[0]) and 'charlie' in str(live.messages[2])
    assert {run.conversation_id for run in runs} == {'c-1'}

    fresh = await ConversationStoreSource(store).run_history(branch_id)  # no listing first
    assert fresh is not None and fresh.messages == branch.messages
    assert await ConversationStoreSource(store).run_history('c-1#branch:nope') is None

    live_only = ConversationStoreSource(store, branches=False)
    assert [run.run_id for run in await live_only.list_runs(conversation_id='c-1')] == ['c-1']


async def test_versions_move_only_when_a_run_changes() -> None:
    store = InMemoryConversationStore()
    agent = echo_agent()
    await store.save(await agent.run('one', conversation=Conversation(conversation_id='c-1')))
    source = ConversationStoreSource(store)
    await source.list_runs()
    first = await source.run_history('c-1')
    again = await source.run_history('c-1')
    assert first is not None and again is not None and first.version == again.version
    loaded = await store.load('c-1')
    assert loaded is not None
    await store.save(await agent.run('two', conversation=loaded))
    await source.list_runs()
    grown = await source.run_history('c-1')
    assert grown is not None and grown.version > first.version and len(grown.messages) == 4
    assert grown.run == first.run  # a stable record: the search's index grows instead of rebuilding


async def test_the_store_scope_is_respected() -> None:
    store = InMemoryConversationStore()
    agent = echo_agent()
    await store.save(await agent.run('for alice', conversation=Conversation(conversation_id='a')), scope='alice')
    await store.save(await agent.run('for bob', conversation=Conversation(conversation_id='b')), scope='bob')
    source = ConversationStoreSource(store, scope='alice')
    assert [run.run_id for run in await source.list_runs()] == ['a']
    assert await source.list_runs(conversation_id='b') == []
    assert await source.run_history('b') is None
    assert await source.run_history('nothing') is None
    assert {run.run_id for run in await ConversationStoreSource(store).list_runs()} == {'a', 'b'}


def test_configuration_errors_name_the_bad_value() -> None:
    with pytest.raises(TypeError, match='needs a pydantic-ai ConversationStore, got dict'):
        ConversationStoreSource({})  # pyright: ignore[reportArgumentType]
    store = InMemoryConversationStore()
    with pytest.raises(TypeError, match="branches must be a bool, got 'yes'"):
        ConversationStoreSource(store, branches='yes')  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match='at least 0, got -1'):
        ConversationStoreSource(store, max_cached_conversations=-1)
    assert ConversationStoreSource(store) == ConversationStoreSource(store)
    assert ConversationStoreSource(store) != ConversationStoreSource(store, scope='x')


@pytest.mark.parametrize('branches', [True, False])
async def test_an_abandoned_branch_is_searchable_unless_turned_off(branches: bool) -> None:
    store = InMemoryConversationStore()
    model = RecallModel()
    search = ConversationSearch(ConversationStoreSource(store, branches=branches), scope='conversation')
    agent = Agent(FunctionModel(model), name='support', capabilities=[search])
    await _turn(store, agent, 'c-1', 'hello there', limit=10)
    await _turn(store, agent, 'c-1', f'remember: {SECRET}', limit=10)
    await _turn(store, agent, 'c-1', 'recall: hello', limit=10)  # the search indexes the conversation so far
    loaded = await store.load('c-1')
    assert loaded is not None
    branched = await store.branch('c-1', at=2, expected_revision=loaded.revision)  # regenerate from turn one
    await store.save(await agent.run('a different second turn', conversation=branched))
    await _turn(store, agent, 'c-1', 'recall: export bucket ZEBRA', limit=10)
    found = 's3://acme-prod/exports/ZEBRA-ledger-2026q1.parquet' in model.answers[-1]
    assert found is branches
