"""The Postgres store's conversation keys: the `{conversation_keys}` table (schema version 15; see `stores._keys`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._keys import ConversationKey, new_key_id, new_key_secret

if TYPE_CHECKING:
    from psycopg import AsyncCursor
    from psycopg.rows import TupleRow

    from ._connect import PostgresConnector

__all__ = ('PostgresKeys',)

_COLUMNS = 'key_id, conversation_id, version, secret, created_at'
_CURRENT = (
    'SELECT key_id, conversation_id, version, secret, created_at FROM {conversation_keys}'
    ' WHERE conversation_id = %s ORDER BY version DESC LIMIT 1'
)
_INSERT = (
    'INSERT INTO {conversation_keys} (key_id, conversation_id, version, secret, created_at)'
    ' VALUES (%s, %s, %s, %s, %s) ON CONFLICT (conversation_id, version) DO NOTHING'
)


class PostgresKeys:
    """`ConversationKeyStore` for `PostgresStepStore` (a mixin: the store's `_db` runs the queries)."""

    _db: PostgresConnector

    async def conversation_key(self, conversation_id: str) -> ConversationKey:
        """The conversation's current key, made if it has none (see `ConversationKeyStore`)."""
        async with self._db.read() as cur:
            await cur.execute(self._db.sql(_CURRENT), (conversation_id,))
            found = await cur.fetchone()
        if found is not None:
            return _key(found)
        # Two workers making the first key at once: one insert wins, and both read the winner.
        async with self._db.transaction() as cur:
            await _insert(cur, self._db, conversation_id, 1)
            await cur.execute(self._db.sql(_CURRENT), (conversation_id,))
            found = await cur.fetchone()
        assert found is not None, 'the key was just inserted'
        return _key(found)

    async def conversation_key_by_id(self, key_id: str) -> ConversationKey | None:
        """The key with this id, or `None` (see `ConversationKeyStore`)."""
        async with self._db.read() as cur:
            await cur.execute(
                self._db.sql(
                    'SELECT key_id, conversation_id, version, secret, created_at FROM {conversation_keys}'
                    ' WHERE key_id = %s'
                ),
                (key_id,),
            )
            found = await cur.fetchone()
        return None if found is None else _key(found)

    async def rotate_conversation_key(self, conversation_id: str) -> ConversationKey:
        """A new current key, one version up (see `ConversationKeyStore`)."""
        async with self._db.transaction() as cur:
            await cur.execute(
                self._db.sql('SELECT MAX(version) FROM {conversation_keys} WHERE conversation_id = %s'),
                (conversation_id,),
            )
            (latest,) = await cur.fetchone() or (None,)
            await _insert(cur, self._db, conversation_id, 1 if latest is None else latest + 1)
            await cur.execute(self._db.sql(_CURRENT), (conversation_id,))
            found = await cur.fetchone()
        assert found is not None, 'the key was just inserted'
        return _key(found)

    async def delete_conversation_keys(self, conversation_id: str, *, below_version: int | None = None) -> int:
        """Delete the conversation's keys, or those under `below_version` (see `ConversationKeyStore`)."""
        async with self._db.transaction() as cur:
            await cur.execute(
                self._db.sql('DELETE FROM {conversation_keys} WHERE conversation_id = %s AND version < %s'),
                (conversation_id, below_version if below_version is not None else 2**31 - 1),
            )
            return cur.rowcount


async def _insert(cur: AsyncCursor[TupleRow], db: PostgresConnector, conversation_id: str, version: int) -> None:
    await cur.execute(db.sql(_INSERT), (new_key_id(), conversation_id, version, new_key_secret(), datetime.now(UTC)))


def _key(row: tuple[Any, ...]) -> ConversationKey:
    key_id, conversation_id, version, secret, created_at = row
    return ConversationKey(
        key_id=key_id,
        conversation_id=conversation_id,
        version=version,
        secret=bytes(secret),
        created_at=created_at.astimezone(UTC),
    )
