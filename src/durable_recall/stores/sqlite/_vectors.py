"""The SQLite store's message vectors for hybrid ranking: the `dr_vectors` table (schema version 9)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...index import VectorRow
from ._connection import SqliteConnection, transaction
from ._params import chunked, marks

__all__ = ('SqliteVectors', 'forget_vectors')


class SqliteVectors:
    """`VectorStorage` over the SQLite store's connection (each method one transaction)."""

    def __init__(self, db: SqliteConnection) -> None:
        self._db = db

    def __repr__(self) -> str:
        return 'SqliteVectors()'

    async def load_vectors(self, model: str, run_ids: Sequence[str]) -> dict[str, VectorRow]:
        def read(conn: sqlite3.Connection) -> dict[str, VectorRow]:
            found: dict[str, VectorRow] = {}
            with transaction(conn, 'BEGIN'):
                for chunk in chunked(dict.fromkeys(run_ids)):
                    rows = conn.execute(
                        'SELECT run_id, seen, dim, hashes, vectors FROM dr_vectors'
                        f' WHERE model = ? AND run_id IN ({marks(chunk)})',
                        [model, *chunk],
                    )
                    for run_id, seen, dim, hashes, vectors in rows:
                        found[run_id] = VectorRow(
                            run_id=run_id, seen=seen, dim=dim, hashes=bytes(hashes), vectors=bytes(vectors)
                        )
            return found

        return await self._db.call(read)

    async def save_vectors(self, model: str, rows: Sequence[VectorRow]) -> None:
        def write(conn: sqlite3.Connection) -> None:
            with transaction(conn, 'BEGIN IMMEDIATE'):
                conn.executemany(
                    'INSERT INTO dr_vectors (run_id, model, seen, dim, hashes, vectors) VALUES (?, ?, ?, ?, ?, ?)'
                    ' ON CONFLICT (run_id, model) DO UPDATE SET seen = excluded.seen, dim = excluded.dim,'
                    ' hashes = excluded.hashes, vectors = excluded.vectors',
                    [(row.run_id, model, row.seen, row.dim, row.hashes, row.vectors) for row in rows],
                )

        if rows:
            await self._db.call(write)


def forget_vectors(conn: sqlite3.Connection, conversation_id: str) -> None:
    """Delete the vectors of a conversation's runs; call in the delete's transaction, before its runs go."""
    conn.execute(
        'DELETE FROM dr_vectors WHERE run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
        (conversation_id,),
    )
