"""The in-memory store's conversation keys (see `stores._keys`): for tests and examples, gone with the process."""

from __future__ import annotations

from datetime import UTC, datetime

from .._keys import ConversationKey, new_key_id, new_key_secret

__all__ = ('MemoryKeys',)


class MemoryKeys:
    """`ConversationKeyStore` for `InMemoryStepStore` (a mixin holding the keys by id)."""

    _keys: dict[str, ConversationKey]

    async def conversation_key(self, conversation_id: str) -> ConversationKey:
        """The conversation's current key, made if it has none (see `ConversationKeyStore`)."""
        current = self._current(conversation_id)
        return current if current is not None else self._make(conversation_id, 1)

    async def conversation_key_by_id(self, key_id: str) -> ConversationKey | None:
        """The key with this id, or `None` (see `ConversationKeyStore`)."""
        return self._keys.get(key_id)

    async def rotate_conversation_key(self, conversation_id: str) -> ConversationKey:
        """A new current key, one version up (see `ConversationKeyStore`)."""
        current = self._current(conversation_id)
        return self._make(conversation_id, 1 if current is None else current.version + 1)

    async def delete_conversation_keys(self, conversation_id: str, *, below_version: int | None = None) -> int:
        """Delete the conversation's keys, or those under `below_version` (see `ConversationKeyStore`)."""
        doomed = [
            key.key_id
            for key in self._keys.values()
            if key.conversation_id == conversation_id and (below_version is None or key.version < below_version)
        ]
        for key_id in doomed:
            del self._keys[key_id]
        return len(doomed)

    def _current(self, conversation_id: str) -> ConversationKey | None:
        keys = [key for key in self._keys.values() if key.conversation_id == conversation_id]
        return max(keys, key=lambda key: key.version) if keys else None

    def _make(self, conversation_id: str, version: int) -> ConversationKey:
        key = ConversationKey(
            key_id=new_key_id(),
            conversation_id=conversation_id,
            version=version,
            secret=new_key_secret(),
            created_at=datetime.now(UTC),
        )
        self._keys[key.key_id] = key
        return key
