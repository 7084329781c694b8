"""The SQLite store's conversation keys: the `dr_conversation_keys` table (schema version 15; see `stores._keys`)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from ...base import from_micros, to_micros
from .._keys import ConversationKey, new_key_id, new_key_secret
from ._connection import SqliteConnection, transaction

__all__ = ('SqliteKeys',)

_COLUMNS = 'key_id, conversation_id, version, secret, created_at'
_CURRENT = f'SELECT {_COLUMNS} FROM dr_conversation_keys WHERE conversation_id = ? ORDER BY version DESC LIMIT 1'


class SqliteKeys:
    """`ConversationKeyStore` for `SqliteStepStore` (a mixin: the store's `_db` runs the queries)."""

    _db: SqliteConnection

    async def conversation_key(self, conversation_id: str) -> ConversationKey:
        """The conversation's current key, made if it has none (see `ConversationKeyStore`)."""

        def read(conn: sqlite3.Connection) -> ConversationKey:
            found = conn.execute(_CURRENT, (conversation_id,)).fetchone()
            if found is not None:
                return _key(found)
            # The write lock, then a second look: another process may have made it meanwhile.
            with transaction(conn, 'BEGIN IMMEDIATE'):
                found = conn.execute(_CURRENT, (conversation_id,)).fetchone()
                return _key(found) if found is not None else _insert(conn, conversation_id, 1)

        return await self._db.call(read)

    async def conversation_key_by_id(self, key_id: str) -> ConversationKey | None:
        """The key with this id, or `None` (see `ConversationKeyStore`)."""

        def read(conn: sqlite3.Connection) -> ConversationKey | None:
            found = conn.execute(f'SELECT {_COLUMNS} FROM dr_conversation_keys WHERE key_id = ?', (key_id,)).fetchone()
            return None if found is None else _key(found)

        return await self._db.call(read)

    async def rotate_conversation_key(self, conversation_id: str) -> ConversationKey:
        """A new current key, one version up (see `ConversationKeyStore`)."""

        def write(conn: sqlite3.Connection) -> ConversationKey:
            with transaction(conn, 'BEGIN IMMEDIATE'):
                found = conn.execute(_CURRENT, (conversation_id,)).fetchone()
                return _insert(conn, conversation_id, 1 if found is None else found[2] + 1)

        return await self._db.call(write)

    async def delete_conversation_keys(self, conversation_id: str, *, below_version: int | None = None) -> int:
        """Delete the conversation's keys, or those under `below_version` (see `ConversationKeyStore`)."""
        bound = below_version if below_version is not None else 2**62

        def write(conn: sqlite3.Connection) -> int:
            conn.execute('PRAGMA secure_delete = ON')
            try:
                with transaction(conn, 'BEGIN IMMEDIATE'):
                    return conn.execute(
                        'DELETE FROM dr_conversation_keys WHERE conversation_id = ? AND version < ?',
                        (conversation_id, bound),
                    ).rowcount
            finally:
                conn.execute('PRAGMA secure_delete = FAST')

        return await self._db.call(write)


def _insert(conn: sqlite3.Connection, conversation_id: str, version: int) -> ConversationKey:
    key = ConversationKey(
        key_id=new_key_id(),
        conversation_id=conversation_id,
        version=version,
        secret=new_key_secret(),
        created_at=datetime.now(UTC),
    )
    conn.execute(
        f'INSERT INTO dr_conversation_keys ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)',
        (key.key_id, conversation_id, version, key.secret, to_micros(key.created_at)),
    )
    return key


def _key(row: tuple[str, str, int, bytes, int]) -> ConversationKey:
    key_id, conversation_id, version, secret, created_at = row
    return ConversationKey(
        key_id=key_id,
        conversation_id=conversation_id,
        version=version,
        secret=bytes(secret),
        created_at=from_micros(created_at),
    )
