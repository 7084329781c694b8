"""Conversation keys: the per-conversation secrets the journal codecs encrypt engine payloads with.

Temporal's workflow histories and DBOS's system database keep copies of what a conversation's
durable operations carried (search answers, snapshot deltas, model requests). durable-recall cannot
delete those copies, but it can make them unreadable: the journal codecs
(`durable_recall.temporal.ConversationPayloadCodec`, `durable_recall.dbos.ConversationSerializer`)
encrypt each such payload with its conversation's key, and the key lives here, in the step store,
beside the conversation. Deleting the conversation (`erase_conversation`, `durable-recall delete`,
`prune`) deletes its keys in the same transaction, and the journal's copies become noise.

A conversation has one or more keys, numbered from 1: the highest is the one new payloads are
encrypted with, the older ones still decrypt what they encrypted (`rotate_conversation_key`).
Each key has a random id, which is all an encrypted payload says about where it belongs.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ('KEY_BYTES', 'ConversationKey', 'ConversationKeyStore', 'conversation_of', 'new_key_id', 'new_key_secret')

KEY_BYTES = 32
"""An AES-256-GCM key's length."""


@dataclass(frozen=True, kw_only=True)
class ConversationKey:
    """One key of a conversation.

    Attributes:
        key_id: Random and unique in the store: what an encrypted payload names its key by.
        conversation_id: The conversation the key belongs to (deleted with it).
        version: 1 for the first key, one more for each rotation; the highest encrypts new payloads.
        secret: The AES-256-GCM key (32 bytes). Never shown: it is left out of `repr`.
        created_at: When it was made (UTC).
    """

    key_id: str
    conversation_id: str
    version: int
    secret: bytes = field(repr=False)
    created_at: datetime


@runtime_checkable
class ConversationKeyStore(Protocol):
    """A store that keeps conversation keys: `SqliteStepStore`, `PostgresStepStore` and `InMemoryStepStore`."""

    async def conversation_key(self, conversation_id: str) -> ConversationKey:
        """The conversation's current key (its highest version), made (version 1) if it has none.

        Safe when several processes ask at once for a conversation that has no key yet: one key is
        made and every caller gets it.
        """
        ...

    async def conversation_key_by_id(self, key_id: str) -> ConversationKey | None:
        """The key with this id, or `None` when there is none (deleted with its conversation)."""
        ...

    async def rotate_conversation_key(self, conversation_id: str) -> ConversationKey:
        """Make a new current key for the conversation (one version up); older keys keep decrypting."""
        ...

    async def delete_conversation_keys(self, conversation_id: str, *, below_version: int | None = None) -> int:
        """Delete the conversation's keys (only those under `below_version`, if given); how many were deleted.

        Deleting the conversation deletes its keys anyway; this is for retiring old keys after a
        rotation, once no journal needs them (the engine's retention has passed).
        """
        ...


def new_key_id() -> str:
    """A random key id: 16 random bytes as 32 hex digits."""
    return secrets.token_hex(16)


def new_key_secret() -> bytes:
    """A fresh AES-256 key from the operating system's random source."""
    return secrets.token_bytes(KEY_BYTES)


def conversation_of(value: object) -> str | None:
    """The conversation a value names, if any: what the journal codecs encrypt it for.

    A `conversation_id` string attribute (your own dataclasses and models, the conversation store's
    load and update requests), a `conversation` with one (a conversation store save), or a
    pydantic-ai operation's serialized run context (`serialized_run_context['conversation_id']`).
    """
    if value is None or isinstance(value, str | bytes | int | float | list | tuple | dict):
        return None
    direct = _attribute(value, 'conversation_id')
    if isinstance(direct, str) and direct:
        return direct
    nested = _attribute(_attribute(value, 'conversation'), 'conversation_id')
    if isinstance(nested, str) and nested:
        return nested
    context = _attribute(value, 'serialized_run_context')
    if isinstance(context, Mapping):
        found = context.get('conversation_id')  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
        if isinstance(found, str) and found:
            return found
    return None


def _attribute(value: object, name: str) -> object:
    # A value's own `__getattr__` may raise anything (pydantic-ai's run context raises `UserError` for
    # fields that did not cross): it names no conversation then, and must not fail its serialization.
    try:
        return getattr(value, name, None)
    except Exception:
        return None
