"""Journal erasure for `TemporalConversationStore`: its loads and saves are encrypted with the conversation's key.

The 7-turn load -> run -> save loop (`_conversation_loop`) over a SQLite conversation store, on the
real dev server, with `conversation_data_converter` over a step store that holds only the keys (the
conversation has no runs there). Without `workflow_conversation`, only what the converter tags is
encrypted: the loads' and saves' inputs and results, and the agent's activities. The raw history
must not hold the detail the conversation recalls; decoded with the codec it must (so the check can
fail); after the keys are deleted (`durable-recall delete --conversation` does it), nothing decodes.
"""

from __future__ import annotations

import uuid

import pytest
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from temporalio import workflow
from temporalio.client import Client
from temporalio.converter import WorkflowSerializationContext
from temporalio.testing import WorkflowEnvironment

from durable_recall.conversations import SqliteConversationStore
from durable_recall.errors import ConversationKeyErasedError
from durable_recall.stores import erase_conversation
from durable_recall.temporal import ConversationPayloadCodec, TemporalConversationStore, conversation_data_converter
from durable_recall.temporal._journal import ENCRYPTED_ENCODING

from .._services.temporal import make_worker
from ._conversation_loop import converse, recall_agent
from ._persistence import STORE_DIR, sqlite_store
from .test_journal_temporal import SECRET, payloads_of, raw_bytes

pytestmark = pytest.mark.anyio

KEYS = sqlite_store('journal-conversation-keys')
STORE = SqliteConversationStore(STORE_DIR / 'journal-conversations.db')
CONVERSATIONS = TemporalConversationStore(STORE, name='journal_chat')
AGENT = recall_agent('journal_conversation', STORE, TemporalDurability())


@workflow.defn(name='durable_recall_tests.JournalConversation')
class JournalConversation(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, conversation_id: str) -> bool:
        # The workflow's own result is not tagged (no `workflow_conversation` here): it says only whether
        # the last turn recalled the detail, never the detail itself.
        outputs = await converse(CONVERSATIONS, AGENT, conversation_id)
        return SECRET.decode() in outputs[-1]


async def test_conversation_store_payloads_are_encrypted_and_erasable(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'journal-chat-{uuid.uuid4().hex}'
    workflow_id = f'chat-{conversation_id}'
    converter = conversation_data_converter(KEYS, key_cache_seconds=0)
    codec = converter.payload_codec
    assert isinstance(codec, ConversationPayloadCodec)
    client = Client(
        temporal_env.client.service_client,
        namespace=temporal_env.client.namespace,
        data_converter=converter,
        plugins=[PydanticAIPlugin()],
    )
    async with make_worker(
        client, workflows=[JournalConversation], activities=CONVERSATIONS.activities, max_cached_workflows=0
    ) as worker:
        recalled = await client.execute_workflow(
            JournalConversation.run, conversation_id, id=workflow_id, task_queue=worker.task_queue
        )
    assert recalled, 'the last turn recalls the detail from the conversation store'
    history = await client.get_workflow_handle(workflow_id).fetch_history()

    assert SECRET not in raw_bytes(history)
    encrypted = [p for p in payloads_of(history) if p.metadata.get('encoding') == ENCRYPTED_ENCODING]
    assert len(encrypted) >= 4 * 7, 'each turn: the load and the save, each with its input and result'
    bound = codec.with_context(WorkflowSerializationContext(namespace=client.namespace, workflow_id=workflow_id))
    assert any(SECRET in p.data for p in await bound.decode(encrypted)), 'the control: decoded, the detail is there'

    erased = await erase_conversation(KEYS, conversation_id)
    assert erased.runs == (), 'the key store holds no run of the conversation, only its keys'
    with pytest.raises(ConversationKeyErasedError):
        await bound.decode(encrypted[:1])
