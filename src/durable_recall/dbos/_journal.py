"""Journal erasure on DBOS: encrypt a conversation's values in the system database with its key.

DBOS records every workflow's inputs and output and every step's output (a search answer, a model
response, what `save_steps` returned) through one configurable `Serializer`. `ConversationSerializer`
wraps DBOS's own (pickle) and encrypts each value that belongs to a conversation with the
conversation's key (AES-256-GCM, `durable_recall.stores.JournalCipher`), recognizing it by:

* the pydantic-ai agent run that is running when the value is recorded: a step of a run with a
  `conversation_id` (model requests, tool calls, the search, `save_steps`) records its output
  inside the run, so the value is the run's conversation's;
* a value of its own naming one (a `conversation_id` attribute, as `conversations.LoadConversation`
  has, or a workflow argument that has one);
* `workflow_conversation`, mapping the DBOS workflow id to a conversation, for everything else the
  workflow records (its own inputs and output).

Other values are stored as DBOS stores them. An encrypted value is the text
`durable-recall-encrypted:v1:<key id>:<base64>`; deleting the conversation deletes the key, and
DBOS then cannot load the value: recovering or reading such a workflow fails with
`ConversationKeyErasedError`. `delete_conversation_workflows` removes the workflows themselves.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from dbos import DBOS, Serializer

from ..stores import ConversationKeyStore, JournalCipher, conversation_of

__all__ = ('ENCRYPTED_PREFIX', 'SERIALIZER_NAME', 'ConversationSerializer', 'delete_conversation_workflows')

SERIALIZER_NAME = 'durable_recall_encrypted'
"""What DBOS records as the serialization of every value this serializer wrote. Compatibility data."""

ENCRYPTED_PREFIX = 'durable-recall-encrypted:v1:'
"""How an encrypted value starts. Compatibility data."""

_T = TypeVar('_T')


class ConversationSerializer(Serializer):
    """A DBOS `Serializer` that encrypts a conversation's recorded values with its key.

    Configure it as `DBOS(config={..., 'serializer': ConversationSerializer(keys)})` in every
    process that launches DBOS (or reads its workflows); the key store is the step store whose
    `erase_conversation` (or `durable-recall delete`) deletes the conversation.

    DBOS calls a serializer synchronously, from its event loop: this one runs the key store on a
    thread and event loop of its own, and caches keys (`key_cache_seconds`), so give it a store
    instance of its own (`SqliteStepStore` or `PostgresStepStore` on the same database as the
    agent's store, not the same object: a Postgres store's pool belongs to one event loop).

    Args:
        store: The store that keeps the keys (its own instance, see above).
        workflow_conversation: Maps a DBOS workflow id to its conversation (or `None`), to encrypt
            the workflow's own inputs and output, which name no conversation themselves.
        key_cache_seconds: How long a key read from the store is reused in this process; also how
            long this process can still decrypt after a delete elsewhere. 0 disables the cache.
        inner: The serializer of the plain values; DBOS's default (pickle) when not given.
    """

    def __init__(
        self,
        store: ConversationKeyStore,
        *,
        workflow_conversation: Callable[[str], str | None] | None = None,
        key_cache_seconds: float = 60.0,
        inner: Serializer | None = None,
    ) -> None:
        self.cipher = JournalCipher(store, key_cache_seconds=key_cache_seconds)
        self.workflow_conversation = workflow_conversation
        self._inner = inner if inner is not None else _default_serializer()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def name(self) -> str:
        """`SERIALIZER_NAME`: DBOS records it beside each value and picks this serializer to read it back."""
        return SERIALIZER_NAME

    def serialize(self, data: Any) -> str:
        """DBOS's serialization of `data`, encrypted if it belongs to a conversation."""
        text = self._inner.serialize(data)
        conversation_id = self._conversation(data)
        if conversation_id is None:
            return text
        key_id, sealed = self._run(self.cipher.seal(conversation_id, text.encode()))
        return f'{ENCRYPTED_PREFIX}{key_id}:{base64.b64encode(sealed).decode()}'

    def deserialize(self, serialized_data: str) -> Any:
        """The value back, decrypted first if it was encrypted.

        Raises:
            ConversationKeyErasedError: Its key is gone (its conversation was deleted).
            JournalPayloadError: It does not decrypt under its key (altered).
        """
        if serialized_data.startswith(ENCRYPTED_PREFIX):
            key_id, _, sealed = serialized_data[len(ENCRYPTED_PREFIX) :].partition(':')
            _, plaintext = self._run(self.cipher.open(key_id, base64.b64decode(sealed)))
            serialized_data = plaintext.decode()
        return self._inner.deserialize(serialized_data)

    def close(self) -> None:
        """Stop the key store's thread (the store itself stays open: close it yourself)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)

    def _conversation(self, data: Any) -> str | None:
        found = _named(data)
        if found is not None:
            return found
        running = _running_conversation()
        if running is not None:
            return running
        if self.workflow_conversation is not None:
            workflow_id = _workflow_id()
            if workflow_id is not None:
                return self.workflow_conversation(workflow_id)
        return None

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name='durable-recall-journal-keys', daemon=True).start()
                self._loop = loop
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


async def delete_conversation_workflows(
    conversation_id: str, *, workflow_conversation: Callable[[str], str | None]
) -> list[str]:
    """Delete from DBOS's system database every workflow `workflow_conversation` maps to the conversation.

    Their inputs, outputs, steps and events go (children included), through DBOS's own
    `delete_workflows`; call it with `erase_conversation`, from a process where DBOS is launched.
    Returns the deleted workflows' ids.
    """
    listed = await DBOS.list_workflows_async(load_input=False, load_output=False)
    doomed = [status.workflow_id for status in listed if workflow_conversation(status.workflow_id) == conversation_id]
    if doomed:
        await DBOS.delete_workflows_async(doomed, delete_children=True)
    return doomed


def _named(data: Any) -> str | None:
    found = conversation_of(data)
    if found is not None:
        return found
    if isinstance(data, Mapping) and 'args' in data:  # DBOS's workflow inputs: {'args': (...), 'kwargs': {...}}
        inputs: Mapping[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        kwargs: Mapping[str, Any] = inputs.get('kwargs') or {}
        for value in (*inputs.get('args', ()), *kwargs.values()):
            found = conversation_of(value)
            if found is not None:
                return found
    return None


def _running_conversation() -> str | None:
    try:
        from pydantic_ai._run_context import get_current_run_context
    except ImportError:  # pragma: no cover - a pydantic-ai without it
        return None
    ctx = get_current_run_context()
    return ctx.conversation_id if ctx is not None and ctx.conversation_id else None


def _workflow_id() -> str | None:
    try:
        return DBOS.workflow_id
    except Exception:  # outside a workflow, DBOS may refuse rather than answer None
        return None


def _default_serializer() -> Serializer:
    from dbos._serialization import DefaultSerializer

    return DefaultSerializer()
