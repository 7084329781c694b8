"""`JournalCipher`: AES-256-GCM under conversation keys, for the journal codecs of both engines.

A sealed value is `nonce (12 bytes) || ciphertext || tag (16 bytes)`, with the key's id bound in as
associated data (`b'durable-recall/journal/v1:' + key id`): a payload moved under another key id
fails to open instead of decrypting as something else. The key id travels beside the sealed value
(Temporal payload metadata, a DBOS envelope), never the conversation id or any of the content.

Keys are cached for `key_cache_seconds` (default 60) so that a busy worker does not read the store
for every payload. That is also how long a process that already held a deleted conversation's key
can still open its payloads: set it to 0 for no cache, or call `forget()` after a delete in the
same process.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ..base import ConversationKeyErasedError, JournalPayloadError
from ._keys import ConversationKey, ConversationKeyStore

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ('JournalCipher', 'load_aesgcm')

_NONCE_BYTES = 12
_AAD_PREFIX = b'durable-recall/journal/v1:'
_CACHE_LIMIT = 4096


def load_aesgcm() -> type[AESGCM]:
    """The `AESGCM` class, or an `ImportError` naming the extra that installs it."""
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            'journal encryption needs the `cryptography` package: pip install "durable-recall[erasure]"'
        ) from error
    return AESGCM


class JournalCipher:
    """Seals and opens journal payloads with conversation keys from a `ConversationKeyStore`.

    Args:
        store: Where the keys live (`SqliteStepStore`, `PostgresStepStore`, `InMemoryStepStore`):
            the store whose `erase_conversation` deletes them.
        key_cache_seconds: How long a key read from the store is reused (see the module docstring).

    Raises:
        StoreConfigurationError: `store` keeps no conversation keys, or `key_cache_seconds` is negative.
    """

    def __init__(self, store: ConversationKeyStore, *, key_cache_seconds: float = 60.0) -> None:
        if not isinstance(store, ConversationKeyStore):  # pyright: ignore[reportUnnecessaryIsInstance]
            from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

            raise StoreConfigurationError(
                f'{store!r} keeps no conversation keys: use SqliteStepStore, PostgresStepStore or InMemoryStepStore'
            )
        if (
            isinstance(key_cache_seconds, bool)
            or not isinstance(key_cache_seconds, int | float)  # pyright: ignore[reportUnnecessaryIsInstance]
            or key_cache_seconds < 0
        ):
            from ..base import StoreConfigurationError  # loads pydantic-ai (see base._errors)

            raise StoreConfigurationError(f'key_cache_seconds must be a number >= 0, got {key_cache_seconds!r}')
        self._aesgcm = load_aesgcm()
        self.store = store
        self.key_cache_seconds = float(key_cache_seconds)
        self._current: dict[str, tuple[ConversationKey, float]] = {}
        self._by_id: dict[str, tuple[ConversationKey, float]] = {}

    async def seal(self, conversation_id: str, plaintext: bytes) -> tuple[str, bytes]:
        """Encrypt with the conversation's current key (made if it has none); the key's id and the sealed bytes."""
        key = self._cached(self._current, conversation_id)
        if key is None:
            key = await self.store.conversation_key(conversation_id)
            self._remember(self._current, conversation_id, key)
            self._remember(self._by_id, key.key_id, key)
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aesgcm(key.secret).encrypt(nonce, plaintext, _AAD_PREFIX + key.key_id.encode())
        return key.key_id, nonce + sealed

    async def open(self, key_id: str, sealed: bytes) -> tuple[ConversationKey, bytes]:
        """Decrypt what `seal` returned; the key it used and the plaintext.

        Raises:
            ConversationKeyErasedError: The store holds no key with this id (its conversation was deleted).
            JournalPayloadError: The bytes do not open under the key (altered, truncated, or moved).
        """
        key = self._cached(self._by_id, key_id)
        if key is None:
            key = await self.store.conversation_key_by_id(key_id)
            if key is None:
                raise ConversationKeyErasedError(key_id)
            self._remember(self._by_id, key_id, key)
        if len(sealed) < _NONCE_BYTES + 16:
            raise JournalPayloadError(key_id, f'{len(sealed)} bytes is too short for a sealed payload')
        from cryptography.exceptions import InvalidTag

        try:
            plaintext = self._aesgcm(key.secret).decrypt(
                sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:], _AAD_PREFIX + key_id.encode()
            )
        except InvalidTag:
            raise JournalPayloadError(key_id, 'the authentication tag does not match (altered or moved)') from None
        return key, plaintext

    def forget(self, conversation_id: str | None = None) -> None:
        """Drop cached keys: the conversation's, or all of them. Call it after deleting in this process."""
        if conversation_id is None:
            self._current.clear()
            self._by_id.clear()
            return
        self._current.pop(conversation_id, None)
        for key_id in [key_id for key_id, (key, _) in self._by_id.items() if key.conversation_id == conversation_id]:
            del self._by_id[key_id]

    def _cached(self, cache: dict[str, tuple[ConversationKey, float]], name: str) -> ConversationKey | None:
        found = cache.get(name)
        if found is None:
            return None
        key, expires = found
        if time.monotonic() >= expires:
            del cache[name]
            return None
        return key

    def _remember(self, cache: dict[str, tuple[ConversationKey, float]], name: str, key: ConversationKey) -> None:
        if self.key_cache_seconds <= 0:
            return
        cache[name] = (key, time.monotonic() + self.key_cache_seconds)
        while len(cache) > _CACHE_LIMIT:
            del cache[next(iter(cache))]
