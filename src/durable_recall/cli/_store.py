"""Open the store a command inspects, without ever creating one.

A store opened by `open_store` creates its file or tables on first use, which is right for an
agent and wrong for an inspection command: a mistyped path must be an error, not a new empty
store. So before opening, this module checks that the SQLite file exists and holds durable-recall
tables (reading it read-only), or that the Postgres schema holds them (on one short-timeout
connection, which also turns an unreachable server into a one-line error). The SQLite checks run
before any layer of the library loads, so a mistyped path is reported without waiting for pydantic-ai.

Which store: the same checks tell a step store (`StepPersistence`'s `dr_meta` table) from a
conversation store (`SqliteConversationStore` / `PostgresConversationStore`, whose tables are `drc_*`,
versioned in `drc_meta`). A database that holds only one is opened as that one; one that holds both
(the stores can share a file or a schema) is opened as the step store, as before conversation stores
existed, unless `--kind conversations` asks for the other. `--kind` naming a store the database does
not hold is an error.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import CliError, install_hint, one_line

# What `urllib.request.pathname2url` is on each platform, without importing `urllib.request`
# (18 ms of `http.client`, `email` and `ssl` on every command that opens a SQLite file).
if sys.platform == 'win32':
    from nturl2path import pathname2url
else:
    from urllib.parse import quote as pathname2url

if TYPE_CHECKING:
    from ..conversations import PostgresConversationStore, SqliteConversationStore
    from ..stores import StepStore

__all__ = ('OpenedConversations', 'OpenedStore', 'check_writable_store', 'open_for_reading')

_META_TABLE = 'dr_meta'
_CONVERSATION_META_TABLE = 'drc_meta'


@dataclass(frozen=True)
class OpenedStore:
    """A store to read, and how to name it in messages (never with a password)."""

    store: StepStore
    label: str


@dataclass(frozen=True)
class OpenedConversations:
    """A conversation store to read, and how to name it in messages (never with a password)."""

    store: SqliteConversationStore | PostgresConversationStore
    label: str


def _pick(has_steps: bool, has_conversations: bool, kind: str | None, where: str) -> str:
    """The kind of store to open, from the meta tables found and `--kind`."""
    if kind is None:
        if has_steps or has_conversations:
            return 'steps' if has_steps else 'conversations'
        return _missing(
            where,
            f'it has no {_META_TABLE} table (step store) or {_CONVERSATION_META_TABLE} table (conversation store)',
        )
    table = _META_TABLE if kind == 'steps' else _CONVERSATION_META_TABLE
    if has_steps if kind == 'steps' else has_conversations:
        return kind
    return _missing(where, f'it has no {table} table (--kind {kind})')


def _missing(where: str, why: str) -> str:
    raise CliError(f'{where} is not a durable-recall store: {why}')


@asynccontextmanager
async def open_for_reading(
    spec: str, *, schema: str | None, connect_timeout: float, kind: str | None = None
) -> AsyncGenerator[OpenedStore | OpenedConversations]:
    """The store `spec` names, checked to exist first; closed when the block ends.

    Args:
        spec: A SQLite path, `sqlite:///path.db`, or a `postgresql://` / `postgres://` URL.
        schema: The Postgres schema holding the tables (`None`: the search path).
        connect_timeout: Seconds to wait for a Postgres server.
        kind: `'steps'` or `'conversations'` (`--kind`); `None` picks the one the database holds.

    Raises:
        CliError: The store does not exist, is not a durable-recall store, cannot be reached, or
            `spec` is not a form this command reads.
    """
    text = spec.strip()
    if text in ('memory:', 'memory://'):
        raise CliError('an in-memory store is empty in a new process: pass a SQLite path or a postgresql:// URL')
    scheme, separator, rest = text.partition('://')
    scheme = scheme.lower()
    if separator and scheme in ('postgresql', 'postgres'):
        opened = await _postgres(text, schema, connect_timeout, kind)
    elif separator and scheme != 'sqlite':
        raise CliError(
            f'store URL scheme {scheme!r} is not supported: pass a SQLite path, sqlite:///path.db or postgresql://...'
        )
    else:
        if schema is not None:
            raise CliError('--schema applies to Postgres stores only')
        if separator and (not rest.startswith('/') or rest == '/'):
            raise CliError(f'{text!r} names no SQLite file: write sqlite:///relative.db or sqlite:////absolute/path.db')
        opened = _sqlite(Path(rest[1:] if separator else text).expanduser(), kind)
    try:
        yield opened
    finally:
        await opened.store.aclose()


def check_writable_store(path: Path) -> None:
    """Refuse to write a step store into a SQLite file that holds some other application's tables.

    The demo creates its store: a missing or empty file is fine, and so is a durable-recall store
    (a step store, or a conversation store whose file a step store may share). Any other database
    would silently gain the store's `dr_*` tables, so it is refused as the inspect commands refuse it.

    Raises:
        CliError: The path is not a file, not a SQLite database, or a database of something else.
    """
    if not path.exists():
        return
    if not path.is_file():
        raise CliError(f'{path} is not a file: pass --store PATH of a SQLite file (it is created if missing)')
    if path.stat().st_size == 0:
        return
    tables = _tables(path)
    if tables and not tables & {_META_TABLE, _CONVERSATION_META_TABLE}:
        shown = ', '.join(sorted(tables)[:5]) + (', ...' if len(tables) > 5 else '')
        raise CliError(
            f'{path} is not a durable-recall store: it holds other tables ({shown}) and no {_META_TABLE} table; '
            'the demo will not add its tables to another database: pass --store with a new file'
        )


def _tables(path: Path) -> set[str]:
    """The names of the tables in the SQLite file at `path`, read read-only."""
    try:
        uri = f'file:{pathname2url(str(path.resolve()))}?mode=ro'
        with sqlite3.connect(uri, uri=True) as conn:
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        conn.close()
    except sqlite3.Error as error:
        raise CliError(f'cannot read {path} as a SQLite database: {one_line(str(error))}') from error
    return names


def _sqlite(path: Path, kind: str | None) -> OpenedStore | OpenedConversations:
    if not path.exists():
        raise CliError(f'no store at {path}: the file does not exist (`durable-recall demo` creates one)')
    if not path.is_file():
        raise CliError(f'no store at {path}: it is not a file')
    tables = _tables(path)
    picked = _pick(_META_TABLE in tables, _CONVERSATION_META_TABLE in tables, kind, str(path))
    if picked == 'conversations':
        from ..conversations import SqliteConversationStore

        return OpenedConversations(SqliteConversationStore(path), str(path))
    from ..stores import SqliteStepStore

    return OpenedStore(SqliteStepStore(path), str(path))


async def _postgres(
    url: str, schema: str | None, connect_timeout: float, kind: str | None
) -> OpenedStore | OpenedConversations:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401  # pyright: ignore[reportUnusedImport]  # the store's pool
        from psycopg import sql
    except ImportError as error:
        raise CliError(
            f'Postgres stores need psycopg and psycopg-pool ({error.name or error} is missing): '
            f'{install_hint("postgres")}'
        ) from error
    from ..stores import PostgresStepStore, redact_url

    store = PostgresStepStore(url, schema=schema, connect_timeout=connect_timeout)  # checks the URL's form
    where = redact_url(url) + (f' (schema {schema!r})' if schema else '')
    tables = [
        sql.Identifier(schema, t) if schema else sql.Identifier(t) for t in (_META_TABLE, _CONVERSATION_META_TABLE)
    ]
    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=max(2, round(connect_timeout))
        )
        async with conn:
            cursor = await conn.execute(
                'SELECT to_regclass(%s), to_regclass(%s)', tuple(table.as_string(conn) for table in tables)
            )
            row = await cursor.fetchone()
    except psycopg.Error as error:
        raise CliError(f'cannot reach Postgres at {where}: {one_line(str(error))}') from error
    has_steps, has_conversations = (row is not None and row[0] is not None), (row is not None and row[1] is not None)
    if not (has_steps or has_conversations) and kind is None:
        hint = 'pass --schema if the tables live in another schema' if schema is None else 'check the schema name'
        raise CliError(
            f'no durable-recall store in Postgres at {where}: table {_META_TABLE} is missing ({hint}), and so is '
            f'{_CONVERSATION_META_TABLE} (a conversation store)'
        )
    if _pick(has_steps, has_conversations, kind, f'Postgres at {where}') == 'conversations':
        from ..conversations import PostgresConversationStore

        return OpenedConversations(
            PostgresConversationStore(url, schema=schema, connect_timeout=connect_timeout), where
        )
    return OpenedStore(store, where)
