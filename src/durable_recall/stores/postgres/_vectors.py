"""The Postgres store's message vectors for hybrid ranking: the `{vectors}` table (schema version 9)."""

from __future__ import annotations

from collections.abc import Sequence

from ...index import VectorRow
from ._connect import PostgresConnector

__all__ = ('PostgresVectors',)


class PostgresVectors:
    """`VectorStorage` over the Postgres store's connector (each method one statement)."""

    def __init__(self, db: PostgresConnector) -> None:
        self._db = db

    def __repr__(self) -> str:
        return f'PostgresVectors({self._db.describe()})'

    async def load_vectors(self, model: str, run_ids: Sequence[str]) -> dict[str, VectorRow]:
        if not run_ids:
            return {}
        async with self._db.read() as cur:
            await cur.execute(
                self._db.sql(
                    'SELECT run_id, seen, dim, hashes, vectors FROM {vectors}'
                    ' WHERE run_id = ANY(%(runs)s::text[]) AND model = %(model)s'
                ),
                {'runs': list(dict.fromkeys(run_ids)), 'model': model},
            )
            rows = await cur.fetchall()
        return {
            run_id: VectorRow(run_id=run_id, seen=seen, dim=dim, hashes=bytes(hashes), vectors=bytes(vectors))
            for run_id, seen, dim, hashes, vectors in rows
        }

    async def save_vectors(self, model: str, rows: Sequence[VectorRow]) -> None:
        if not rows:
            return
        async with self._db.transaction() as cur:
            await cur.executemany(
                self._db.sql(
                    'INSERT INTO {vectors} (run_id, model, seen, dim, hashes, vectors) VALUES (%s, %s, %s, %s, %s, %s)'
                    ' ON CONFLICT (run_id, model) DO UPDATE SET seen = excluded.seen, dim = excluded.dim,'
                    ' hashes = excluded.hashes, vectors = excluded.vectors'
                ),
                [(row.run_id, model, row.seen, row.dim, row.hashes, row.vectors) for row in rows],
            )
