"""Journal erasure on Temporal: encrypt a conversation's payloads in workflow histories with its key.

Two pieces, because a `PayloadCodec` sees bytes and never the values they came from:

* `ConversationPayloadConverter` (pydantic-ai's payload converter, which the `PydanticAIPlugin`
  keeps because it subclasses it) tags each payload it makes from a value that names a conversation
  with that conversation's id, in the payload's metadata: the inputs of every activity an agent run
  with a `conversation_id` makes (model requests, tool calls (the search among them), `save_steps`;
  pydantic-ai serializes the run context, conversation id included, into each), the loads, saves
  and updates of `TemporalConversationStore`, and any value of your own with a `conversation_id`
  attribute (a dataclass or model you pass as a workflow input). All payloads of one call (an
  activity's arguments, `deps` included) share the tag.
* `ConversationPayloadCodec` encrypts each tagged payload with the conversation's key, replacing
  the tag with the key's random id (the only thing about the payload left in clear), and encrypts an
  activity's result (and heartbeat details, and failure details) with the key its input was
  encrypted with, which it recognizes by the activity's serialization context. With
  `workflow_conversation`, every other payload of a workflow that function maps to a conversation
  (its input and result, signals, updates, queries) is encrypted too. Other payloads pass unchanged.

Decoding needs the key: after `erase_conversation` (or `durable-recall delete`), a replay, a reset
or a history decode that reads one of the conversation's payloads fails with
`ConversationKeyErasedError`.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Self

from pydantic_ai.durable_exec.temporal import PydanticAIPayloadConverter
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ActivitySerializationContext,
    DataConverter,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

from ..stores import ConversationKeyStore, JournalCipher, conversation_of

__all__ = (
    'CONVERSATION_METADATA_KEY',
    'ENCRYPTED_ENCODING',
    'KEY_METADATA_KEY',
    'ConversationPayloadCodec',
    'ConversationPayloadConverter',
    'conversation_data_converter',
)

CONVERSATION_METADATA_KEY = 'durable-recall-conversation'
"""The converter's tag: the conversation a payload belongs to. The codec removes it (encrypting the payload)."""

ENCRYPTED_ENCODING = b'binary/durable-recall-encrypted'
"""An encrypted payload's `encoding`. Compatibility data: changing it strands encrypted histories."""

KEY_METADATA_KEY = 'durable-recall-key'
"""An encrypted payload's metadata naming its key (a random id). Compatibility data."""

_ACTIVITY_MEMO_LIMIT = 4096


class ConversationPayloadConverter(PydanticAIPayloadConverter):
    """pydantic-ai's payload converter, tagging payloads with the conversation their values name.

    See the module docstring for which values; the tag is the metadata entry
    `CONVERSATION_METADATA_KEY`, which `ConversationPayloadCodec` replaces with a key id as it
    encrypts. Without the codec the tag (a conversation id) would reach the history: use the two
    together (`conversation_data_converter`).
    """

    def to_payloads(self, values: Sequence[Any]) -> list[Payload]:
        """Convert as pydantic-ai does, then tag every payload of the call if a value names a conversation."""
        payloads = super().to_payloads(values)
        conversation_id = next((found for found in map(conversation_of, values) if found is not None), None)
        if conversation_id is not None:
            for payload in payloads:
                payload.metadata[CONVERSATION_METADATA_KEY] = conversation_id.encode()
        return payloads


@dataclasses.dataclass
class _Shared:
    """What every contextual copy of one codec shares: the cipher (and its key cache) and the activity memo."""

    cipher: JournalCipher
    workflow_conversation: Callable[[str], str | None] | None
    activities: OrderedDict[tuple[str, str], str] = dataclasses.field(default_factory=OrderedDict[tuple[str, str], str])
    """The conversation of each activity whose input this process decrypted, by (workflow id, activity id)."""

    def remember(self, activity: tuple[str, str], conversation_id: str) -> None:
        self.activities[activity] = conversation_id
        self.activities.move_to_end(activity)
        while len(self.activities) > _ACTIVITY_MEMO_LIMIT:
            self.activities.popitem(last=False)


class ConversationPayloadCodec(PayloadCodec, WithSerializationContext):
    """A Temporal `PayloadCodec` that encrypts a conversation's payloads with its key (AES-256-GCM).

    Use it with `ConversationPayloadConverter` on the client (workers inherit it), on every worker
    and replayer, and wherever histories are decoded; `conversation_data_converter` builds the pair.
    The key store is the step store whose `erase_conversation` (or `durable-recall delete`)
    deletes the conversation: deleting it deletes its keys, and its payloads in every history can
    no longer be decoded (`ConversationKeyErasedError`).

    Args:
        store: The store that keeps the keys (`SqliteStepStore`, `PostgresStepStore`; `InMemoryStepStore`
            in tests). Every process encoding or decoding must reach the same store.
        workflow_conversation: Maps a workflow id to the conversation the workflow serves (or `None`),
            to encrypt that workflow's own payloads (its input, result, signals, updates, queries)
            which name no conversation themselves. Without it they pass unchanged, unless a value
            has a `conversation_id` attribute.
        key_cache_seconds: How long a key read from the store is reused in this process; also how
            long this process can still decrypt after a delete elsewhere. 0 disables the cache.
    """

    def __init__(
        self,
        store: ConversationKeyStore,
        *,
        workflow_conversation: Callable[[str], str | None] | None = None,
        key_cache_seconds: float = 60.0,
    ) -> None:
        self._shared = _Shared(JournalCipher(store, key_cache_seconds=key_cache_seconds), workflow_conversation)
        self._context: SerializationContext | None = None

    @property
    def cipher(self) -> JournalCipher:
        """The cipher and its key cache (`cipher.forget(conversation_id)` after a delete in this process)."""
        return self._shared.cipher

    def with_context(self, context: SerializationContext) -> Self:
        """A copy bound to the workflow or activity whose payloads it is about to encode or decode."""
        bound = object.__new__(type(self))
        bound._shared = self._shared
        bound._context = context
        return bound

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt each payload that belongs to a conversation; pass the others unchanged."""
        return [await self._encode(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt each encrypted payload; pass the others unchanged.

        Raises:
            ConversationKeyErasedError: A payload's key is gone (its conversation was deleted).
            JournalPayloadError: A payload does not decrypt under its key (altered).
        """
        return [await self._decode(payload) for payload in payloads]

    async def _encode(self, payload: Payload) -> Payload:
        if payload.metadata.get('encoding') == ENCRYPTED_ENCODING:
            return payload
        inner = Payload()
        inner.CopyFrom(payload)
        # Not `pop`: reading a missing key of a protobuf map inserts it (as b'').
        conversation_id: str | None = None
        if CONVERSATION_METADATA_KEY in inner.metadata:
            conversation_id = inner.metadata[CONVERSATION_METADATA_KEY].decode()
            del inner.metadata[CONVERSATION_METADATA_KEY]
        conversation_id = conversation_id or self._conversation_from_context()
        if conversation_id is None:
            return inner
        key_id, sealed = await self._shared.cipher.seal(conversation_id, inner.SerializeToString())
        return Payload(metadata={'encoding': ENCRYPTED_ENCODING, KEY_METADATA_KEY: key_id.encode()}, data=sealed)

    async def _decode(self, payload: Payload) -> Payload:
        if payload.metadata.get('encoding') != ENCRYPTED_ENCODING:
            return payload
        key_id = payload.metadata[KEY_METADATA_KEY].decode()
        key, plaintext = await self._shared.cipher.open(key_id, payload.data)
        activity = self._activity()
        if activity is not None:
            self._shared.remember(activity, key.conversation_id)
        return Payload.FromString(plaintext)

    def _activity(self) -> tuple[str, str] | None:
        context = self._context
        if isinstance(context, ActivitySerializationContext) and context.workflow_id and context.activity_id:
            return (context.workflow_id, context.activity_id)
        return None

    def _conversation_from_context(self) -> str | None:
        activity = self._activity()
        if activity is not None and activity in self._shared.activities:
            # An activity's result (or heartbeat, or failure details): the key its input came under.
            return self._shared.activities[activity]
        context = self._context
        mapping = self._shared.workflow_conversation
        if mapping is None:
            return None
        workflow_id = (
            context.workflow_id
            if isinstance(context, WorkflowSerializationContext | ActivitySerializationContext)
            else None
        )
        return mapping(workflow_id) if workflow_id else None


def conversation_data_converter(
    store: ConversationKeyStore,
    *,
    workflow_conversation: Callable[[str], str | None] | None = None,
    key_cache_seconds: float = 60.0,
) -> DataConverter:
    """A `DataConverter` with `ConversationPayloadConverter` and a `ConversationPayloadCodec` over `store`.

    Pass it to `Client.connect(..., data_converter=...)` (workers made from the client inherit it)
    and to any `Replayer`; the arguments are the codec's.
    """
    codec = ConversationPayloadCodec(
        store, workflow_conversation=workflow_conversation, key_cache_seconds=key_cache_seconds
    )
    return DataConverter(payload_converter_class=ConversationPayloadConverter, payload_codec=codec)
