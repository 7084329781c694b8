"""Journal erasure on Temporal: a conversation's history payloads are encrypted, and unreadable once it is deleted.

Runs the 7-run recall conversation (`_recall_script`: the secret is seen in run 1, compacted away and
recalled by a search in run 7) on the real dev server, with `conversation_data_converter` on the
client. The raw history (protobuf bytes, its JSON, and `temporal workflow show --output json`) must
not hold the secret, while the same history decoded with the codec does (so the check can fail);
after `erase_conversation`, decoding and replaying fail with `ConversationKeyErasedError`.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest
from google.protobuf.message import Message
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHistory
from temporalio.converter import DataConverter, WorkflowSerializationContext
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, WorkflowReplayResult

from durable_recall.errors import ConversationKeyErasedError
from durable_recall.stores import erase_conversation
from durable_recall.temporal import (
    ConversationPayloadCodec,
    ConversationPayloadConverter,
    conversation_data_converter,
)
from durable_recall.temporal._journal import ENCRYPTED_ENCODING, KEY_METADATA_KEY

from .._services.temporal import make_worker, sandboxed_runner, temporal_cli_path
from ._persistence import sqlite_store
from ._recall_script import converse, recall_capabilities, recall_model

pytestmark = pytest.mark.anyio

SECRET = b'acme-ZEBRA-exports'
"""From the conversation's first turn (`_recall_script.DETAIL`); the search in run 7 returns it."""

STORE = sqlite_store('journal-temporal')
AGENT = Agent(
    recall_model(), name='journal_encrypted', capabilities=[*recall_capabilities(STORE), TemporalDurability()]
)


def conversation_of_workflow(workflow_id: str) -> str | None:
    return workflow_id.removeprefix('chat-') if workflow_id.startswith('chat-') else None


@workflow.defn(name='durable_recall_tests.JournalEncrypted')
class JournalEncrypted(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(AGENT, conversation_id)


_UNCODED = frozenset(
    ('search_attributes', 'upsert_workflow_search_attributes_event_attributes', 'marker_recorded_event_attributes')
)


def payloads_of(history: WorkflowHistory) -> list[Payload]:
    """Every payload in the history's events (inputs, results, headers, failures' details), by walking the protobufs."""
    found: list[Payload] = []

    def walk(message: Message) -> None:
        if isinstance(message, Payload):
            found.append(message)
            return
        for field, value in message.ListFields():
            # Search attributes are indexed by the server, and the SDK writes patch markers itself: no codec
            # sees either (they hold pydantic-ai's patch ids, never conversation content).
            if field.message_type is None or field.name in _UNCODED:
                continue
            if field.message_type.GetOptions().map_entry:
                items = list(cast(Mapping[Any, Any], value).values())
            elif field.is_repeated:
                items = list(cast(Sequence[Any], value))
            else:
                items = [value]
            for item in items:
                if isinstance(item, Message):
                    walk(item)

    for event in history.events:
        walk(event)
    return found


def raw_bytes(history: WorkflowHistory) -> bytes:
    return b''.join(event.SerializeToString() for event in history.events) + history.to_json().encode()


def cli_show(env: WorkflowEnvironment, workflow_id: str) -> bytes:
    """`temporal workflow show --output json`: the history as the CLI prints it (no codec endpoint)."""
    cli = temporal_cli_path()
    assert cli is not None
    target = env.client.service_client.config.target_host
    shown = subprocess.run(
        [str(cli), 'workflow', 'show', '--workflow-id', workflow_id, '--address', target, '--output', 'json'],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return shown.stdout


async def test_history_holds_no_plaintext_and_is_unreadable_after_delete(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'journal-{uuid.uuid4().hex}'
    workflow_id = f'chat-{conversation_id}'
    converter = conversation_data_converter(STORE, workflow_conversation=conversation_of_workflow, key_cache_seconds=0)
    codec = converter.payload_codec
    assert isinstance(codec, ConversationPayloadCodec)
    assert converter.payload_converter_class is ConversationPayloadConverter
    client = Client(
        temporal_env.client.service_client,
        namespace=temporal_env.client.namespace,
        data_converter=converter,
        plugins=[PydanticAIPlugin()],
    )
    async with make_worker(client, workflows=[JournalEncrypted], max_cached_workflows=0) as worker:
        outputs = await client.execute_workflow(
            JournalEncrypted.run, conversation_id, id=workflow_id, task_queue=worker.task_queue
        )
    assert SECRET.decode() in outputs[-1], 'the search in run 7 recalls the secret'
    history = await client.get_workflow_handle(workflow_id).fetch_history()

    # Encrypted: neither the raw history nor the CLI's JSON shows the secret, and every payload is ours.
    assert SECRET not in raw_bytes(history)
    shown = cli_show(temporal_env, workflow_id)
    assert json.loads(shown)['events'], 'the CLI printed the history'
    assert SECRET not in shown
    payloads = payloads_of(history)
    encrypted = [p for p in payloads if p.metadata.get('encoding') == ENCRYPTED_ENCODING]
    assert len(encrypted) == len(payloads) > 20
    assert all(conversation_id.encode() not in p.SerializeToString() for p in payloads)
    key_ids = {p.metadata[KEY_METADATA_KEY] for p in encrypted}
    assert len(key_ids) == 1, 'one conversation, one key'

    # The control: decoded with the codec, the same payloads hold the secret (and the conversation id).
    bound = codec.with_context(WorkflowSerializationContext(namespace=client.namespace, workflow_id=workflow_id))
    decoded = await bound.decode(payloads)
    assert any(SECRET in p.data for p in decoded)
    replayed = await _replay(history, converter)
    assert replayed.replay_failure is None

    erased = await erase_conversation(STORE, conversation_id)
    assert len(erased.runs) == 7

    with pytest.raises(ConversationKeyErasedError) as raised:
        await bound.decode(encrypted[:1])
    assert raised.value.key_id == next(iter(key_ids)).decode()
    failed = await _replay(history, converter)
    assert failed.replay_failure is not None
    assert 'ConversationKeyErasedError' in _chain(failed.replay_failure)


async def _replay(history: WorkflowHistory, converter: DataConverter) -> WorkflowReplayResult:
    with ThreadPoolExecutor(thread_name_prefix='temporal-replayer') as executor:
        replayer = Replayer(
            workflows=[JournalEncrypted],
            plugins=[PydanticAIPlugin()],
            workflow_runner=sandboxed_runner(),
            workflow_task_executor=executor,
            data_converter=converter,
        )
        return await replayer.replay_workflow(history, raise_on_replay_failure=False)


def _chain(error: BaseException) -> str:
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None:
        parts.append(f'{type(current).__name__}: {current}')
        current = current.__cause__ or current.__context__
    return ' <- '.join(parts)
