"""`PostgresConversationStore`: pydantic-ai's `ConversationStore` on PostgreSQL, for many workers on many hosts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, LiteralString

from ...stores import ScrubReport
from ...stores.postgres import AsyncConnectionPoolLike, scrub_tables
from .._api import ConversationEntry, ConversationRecord, ConversationStore
from .._reads import check_details, check_limit, decode_history, decode_records
from . import _queries
from ._entry_log import PostgresEntryLog
from ._tables import connect

if TYPE_CHECKING:
    from pydantic_ai.conversation_store import ConversationDetails

__all__ = ('PostgresConversationStore',)


class PostgresConversationStore(ConversationStore):
    """Keeps pydantic-ai conversations in PostgreSQL tables (`drc_*`), shared by every worker that points at them.

    pydantic-ai's `ConversationStore` does load, save, branch, fork, update and delete over the five
    storage primitives this class implements, plus `write_details` (a conversation's title and
    metadata, pydantic-ai-slim>=2.78), and `read_history`, overridden to read a history up to any
    entry (or its last `limit` entries) in one recursive query.

    A save writes the record and its new entries in one transaction whose revision check is a
    conditional `UPDATE ... WHERE revision = expected`: of two workers (on any hosts) saving one
    conversation from the same revision, exactly one succeeds, and the other raises
    `ConversationConflict` with nothing of its save stored. `delete` removes the record and every
    entry of its history and branches that no remaining record (a fork, say) reaches; per-lineage
    advisory locks keep it from releasing entries a concurrent save or fork is about to point at.

    Construction is cheap and needs no event loop: the pool is opened, and the tables created or
    migrated, on first use, inside the loop that uses the store. The tables can share a schema with
    `PostgresStepStore`'s (`dr_*`): each keeps its own schema version. An owned pool belongs to the
    event loop that opened it; use one store per event loop.

    `ConversationStoreSource` over this store searches a persistent index kept in the same schema
    (`drc_index_*` tables), caught up from the entry log, so a cold worker does not re-read unchanged
    conversations; `delete` removes the conversation from it too.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: AsyncConnectionPoolLike | None = None,
        schema: str | None = None,
        connect_timeout: float = 5.0,
        max_size: int = 10,
    ) -> None:
        """Describe the database; nothing connects until the store is first used.

        Args:
            url: A `postgresql://` (or `postgres://`) URL; the store opens and closes its own pool.
            pool: A caller-owned psycopg async pool (autocommit connections), used instead of `url`
                and never closed here.
            schema: Keep the tables in this schema (created if missing) instead of the search path.
            connect_timeout: Seconds to wait for the server before raising
                [`StoreUnavailableError`][durable_recall.errors.StoreUnavailableError].
            max_size: The most connections the store's own pool opens.

        Raises:
            StoreConfigurationError: Neither or both of `url` and `pool`, a malformed URL, an unusable
                schema name, or a timeout or pool size out of range.
            ImportError: psycopg is not installed.
        """
        self._db = connect(url, pool, schema=schema, connect_timeout=connect_timeout, max_size=max_size)

    def __repr__(self) -> str:
        return f'PostgresConversationStore({self._db.describe()})'

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation's record with its branches, or `None`."""
        async with self._db.transaction() as cur:
            await cur.execute(self._db.sql(_queries.RECORDS + ' WHERE r.conversation_id = %s'), (conversation_id,))
            rows: list[Any] = await cur.fetchall()
        found = decode_records([(row[:-1], row[-1]) for row in rows])
        return found[0] if found else None

    async def read_records(self, *, scope: str | None = None, limit: int | None = None) -> Sequence[ConversationRecord]:
        """The records, or those in `scope`, most recently saved first, at most `limit`."""
        check_limit(limit)
        where = '' if scope is None else ' WHERE r.scope = %s'
        params: list[Any] = [] if scope is None else [scope]
        async with self._db.transaction() as cur:
            await cur.execute(
                self._db.sql(_queries.RECORDS + where + ' ORDER BY r.updated_at DESC, r.conversation_id DESC LIMIT %s'),
                (*params, limit),
            )
            rows: list[Any] = await cur.fetchall()
        return decode_records([(row[:-1], row[-1]) for row in rows])

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        """Store the record and its new entries in one transaction, with a conditional write on the revision."""
        async with self._db.transaction() as cur:
            await _queries.write_record(self._db, cur, record, new_entries, expected_revision)

    async def write_details(
        self,
        conversation_id: str,
        details: ConversationDetails,
        *,
        expected_revision: str,
        expected: ConversationDetails | None = None,
    ) -> ConversationRecord:
        """Write the title or metadata (only the keys given) if the record has `expected_revision` and `expected`.

        One conditional `UPDATE ... WHERE` in one transaction: of two workers setting a title
        `expected` to be unset, the second waits on the first's row lock, re-evaluates its condition
        against the committed title, matches nothing and raises `ConversationConflict`. The revision
        and `updated_at` stay as they are; a save never writes these columns back.

        Raises:
            ConversationConflict: No record with `expected_revision` and the `expected` values is stored.
            NotImplementedError: A key other than `title` and `metadata`, or a pydantic-ai whose
                `ConversationRecord` has no title (before 2.78).
            UserError: A title that is not a string, or metadata that is not a JSON object.
        """
        check_details(type(self).__name__)
        async with self._db.transaction() as cur:
            rows = await _queries.write_details(self._db, cur, conversation_id, details, expected_revision, expected)
        return decode_records([(row[:-1], row[-1]) for row in rows])[0]

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete the record and the entries no remaining record reaches, in one transaction."""
        async with self._db.transaction() as cur:
            await _queries.delete_record(self._db, cur, conversation_id, expected_revision)

    async def scrub(self) -> ScrubReport:
        """`VACUUM FULL` the store's tables, so that no deleted byte stays in them (see docs/erasure.md)."""
        return await scrub_tables(self._db, _SCRUBBED)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        """One entry.

        Raises:
            KeyError: The store has no entry with this id.
        """
        return (await self._history(entry_id, 1))[0]

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        """The entries from the first up to `head_id`, or its last `limit`, in one query.

        Raises:
            KeyError: `head_id` or an entry before it is missing (a concurrent delete released it).
        """
        check_limit(limit)
        if head_id is None or limit == 0:
            return []
        return await self._history(head_id, limit)

    async def _history(self, head_id: str, limit: int | None) -> list[ConversationEntry]:
        async with self._db.transaction() as cur:
            await cur.execute(self._db.sql(_queries.HISTORY), (head_id, 2**62 if limit is None else limit))
            rows: list[Any] = await cur.fetchall()
        return decode_history(head_id, rows, limit)

    def entry_log(self) -> PostgresEntryLog:
        """The entry log and index bookkeeping the persistent search index reads (see `ConversationStoreSource`)."""
        return PostgresEntryLog(self._db)

    async def aclose(self) -> None:
        """Close the pool the store opened; a caller-owned pool stays open."""
        await self._db.aclose()


_SCRUBBED: tuple[LiteralString, ...] = (
    'records',
    'branches',
    'entries',
    'runs',
    'index_conversations',
    'pending',
    'index_scopes',
    'index_runs',
    'index_postings',
    'index_groups',
    'index_hashes',
)
"""The tables a delete touches (`CONVERSATION_TABLES` less `meta`), which `scrub` rewrites."""
