"""Which tables a `PostgresConnector` names, creates and migrates: the step store's, or a conversation store's.

Two sets of tables can share one Postgres schema and upgrade independently, each recording its own
version in its own meta table; the connector (`_connect`) is the same for both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import LiteralString

from .._migrations import POSTGRES_META, POSTGRES_MIGRATIONS, check_version

__all__ = ('STEP_TABLES', 'TABLES', 'PostgresTables')

TABLES: tuple[str, ...] = (
    'meta',
    'runs',
    'messages',
    'message_refs',
    'snapshots',
    'pending',
    'index_scopes',
    'index_runs',
    'index_terms',
    'index_postings',
    'index_hashes',
    'vectors',
    'index_groups',
    'conversation_keys',
    'runs_by_started',
    'runs_by_parent',
    'index_runs_by_scope',
)
"""The step store's tables' placeholder names in query templates; each table is `dr_<name>`.

The last three name indexes a migration drops (version 10): `DROP INDEX` takes the index's schema,
which a placeholder supplies as it does a table's."""


@dataclass(frozen=True)
class PostgresTables:
    """A set of tables versioned together in a Postgres schema: what `PostgresConnector` names and migrates.

    Two sets can share one schema and upgrade independently, each recording its own version in its
    own meta table: the step store's (`STEP_TABLES`) and a conversation store's.
    """

    store: str
    """The store's class name, which starts its configuration errors (`'PostgresStepStore'`)."""
    prefix: str
    """Each table is `<prefix><name>` (`'dr_'`)."""
    names: tuple[str, ...]
    """The placeholders query templates name tables by (`{meta}`, `{runs}`, ...); `meta` among them."""
    meta: LiteralString
    """The statement that creates `{meta}` if it is missing, before the version is read."""
    migrations: tuple[tuple[LiteralString, ...], ...]
    """Entry `n` moves the set from version `n` to `n + 1`: the version this release writes is their count."""
    check_version: Callable[[int, str], None]
    """Refuses a version newer than this release understands (given the version and where it was found)."""
    migrate_lock: str
    """The advisory lock (with the schema appended) that serialises migrations across workers."""
    pool_name: str
    """The name of the pool the connector opens for a URL (psycopg_pool's logs)."""
    version_name: str = 'schema version'
    """What the recorded version is called in errors."""

    @property
    def version(self) -> int:
        """The version this release writes and understands."""
        return len(self.migrations)


STEP_TABLES = PostgresTables(
    store='PostgresStepStore',
    prefix='dr_',
    names=TABLES,
    meta=POSTGRES_META,
    migrations=POSTGRES_MIGRATIONS,
    check_version=check_version,
    migrate_lock='durable_recall.migrate',
    pool_name='durable-recall',
)
"""The step store's tables (`dr_*`)."""
