"""The Postgres conversation store's tables, as the step store's `PostgresConnector` reaches and migrates them.

One connection code serves both stores (`durable_recall.stores.postgres`): a pool opened inside the
event loop that uses it, a first connection that fails fast and says why, dead connections a
restarted server left in the pool set aside, and migrations under an advisory lock. What is the
conversation store's own is which tables: the `drc_*` set, versioned in `drc_meta` apart from the
step store's `dr_*`, so both can share a schema; and its per-lineage advisory locks (`lock_key`).
"""

from __future__ import annotations

from ...stores.postgres import AsyncConnectionPoolLike, PostgresConnector, PostgresTables
from .._migrations import POSTGRES_META, POSTGRES_MIGRATIONS, check_version

__all__ = ('CONVERSATION_TABLES', 'connect', 'lock_key')

CONVERSATION_TABLES = PostgresTables(
    store='PostgresConversationStore',
    prefix='drc_',
    names=(
        'meta',
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
    ),
    meta=POSTGRES_META,
    migrations=POSTGRES_MIGRATIONS,
    check_version=check_version,
    migrate_lock='durable_recall.conversations.migrate',
    pool_name='durable-recall-conversations',
    version_name='conversation schema version',
)
"""The conversation store's tables (`drc_<name>`, named `{<name>}` in query templates)."""


def connect(
    url: str | None,
    pool: AsyncConnectionPoolLike | None,
    *,
    schema: str | None,
    connect_timeout: float,
    max_size: int,
) -> PostgresConnector:
    """A connector for the conversation store's tables (see `PostgresConnector`); nothing connects yet.

    Raises:
        StoreConfigurationError: Neither or both of `url` and `pool`, a malformed URL, an unusable
            schema name, or a timeout or pool size out of range.
        ImportError: psycopg is not installed.
    """
    return PostgresConnector(
        url, pool, schema=schema, connect_timeout=connect_timeout, max_size=max_size, tables=CONVERSATION_TABLES
    )


def lock_key(db: PostgresConnector, lineage: str) -> str:
    """The advisory-lock name of a lineage; with the schema in it, two schemas' stores never wait on each other."""
    return f'durable_recall.conversations:{db.schema or ""}:{lineage}'
