"""Open the store a command inspects, without ever creating one.

A store opened by `open_store` creates its file or tables on first use, which is right for an
agent and wrong for an inspection command: a mistyped path must be an error, not a new empty
store. So before opening, this module checks that the SQLite file exists and holds durable-recall
tables (reading it read-only), or that the Postgres schema holds them (on one short-timeout
connection, which also turns an unreachable server into a one-line error). The SQLite checks run
before any layer of the library loads, so a mistyped path is reported without waiting for pydantic-ai.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.request import pathname2url

from ._errors import CliError, one_line

if TYPE_CHECKING:
    from ..stores import StepStore

__all__ = ('OpenedStore', 'open_for_reading')

_META_TABLE = 'dr_meta'


@dataclass(frozen=True)
class OpenedStore:
    """A store to read, and how to name it in messages (never with a password)."""

    store: StepStore
    label: str


@asynccontextmanager
async def open_for_reading(spec: str, *, schema: str | None, connect_timeout: float) -> AsyncGenerator[OpenedStore]:
    """The store `spec` names, checked to exist first; closed when the block ends.

    Args:
        spec: A SQLite path, `sqlite:///path.db`, or a `postgresql://` / `postgres://` URL.
        schema: The Postgres schema holding the tables (`None`: the search path).
        connect_timeout: Seconds to wait for a Postgres server.

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
        opened = await _postgres(text, schema, connect_timeout)
    elif separator and scheme != 'sqlite':
        raise CliError(
            f'store URL scheme {scheme!r} is not supported: pass a SQLite path, sqlite:///path.db or postgresql://...'
        )
    else:
        if schema is not None:
            raise CliError('--schema applies to Postgres stores only')
        if separator and (not rest.startswith('/') or rest == '/'):
            raise CliError(f'{text!r} names no SQLite file: write sqlite:///relative.db or sqlite:////absolute/path.db')
        opened = _sqlite(Path(rest[1:] if separator else text).expanduser())
    try:
        yield opened
    finally:
        await opened.store.aclose()


def _sqlite(path: Path) -> OpenedStore:
    if not path.exists():
        raise CliError(f'no store at {path}: the file does not exist (`durable-recall demo` creates one)')
    if not path.is_file():
        raise CliError(f'no store at {path}: it is not a file')
    try:
        uri = f'file:{pathname2url(str(path.resolve()))}?mode=ro'
        with sqlite3.connect(uri, uri=True) as conn:
            found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_META_TABLE,))
            has_meta = found.fetchone() is not None
        conn.close()
    except sqlite3.Error as error:
        raise CliError(f'cannot read {path} as a SQLite database: {one_line(str(error))}') from error
    if not has_meta:
        raise CliError(f'{path} is not a durable-recall store: it has no {_META_TABLE} table')
    from ..stores import SqliteStepStore

    return OpenedStore(SqliteStepStore(path), str(path))


async def _postgres(url: str, schema: str | None, connect_timeout: float) -> OpenedStore:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401  # pyright: ignore[reportUnusedImport]  # the store's pool
        from psycopg import sql
    except ImportError as error:
        raise CliError(
            f'Postgres stores need psycopg and psycopg-pool ({error.name or error} is missing): '
            "pip install 'durable-recall[postgres]'"
        ) from error
    from ..stores import PostgresStepStore, redact_url

    store = PostgresStepStore(url, schema=schema, connect_timeout=connect_timeout)  # checks the URL's form
    where = redact_url(url) + (f' (schema {schema!r})' if schema else '')
    table = sql.Identifier(schema, _META_TABLE) if schema else sql.Identifier(_META_TABLE)
    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=max(2, round(connect_timeout))
        )
        async with conn:
            cursor = await conn.execute('SELECT to_regclass(%s)', (table.as_string(conn),))
            row = await cursor.fetchone()
    except psycopg.Error as error:
        raise CliError(f'cannot reach Postgres at {where}: {one_line(str(error))}') from error
    if row is None or row[0] is None:
        hint = 'pass --schema if the tables live in another schema' if schema is None else 'check the schema name'
        raise CliError(f'no durable-recall store in Postgres at {where}: table {_META_TABLE} is missing ({hint})')
    return OpenedStore(store, where)
