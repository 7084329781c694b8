"""The similarity side of hybrid ranking: the scope's message vectors, kept current, and a query's scores.

Vectors are computed here, inside a durable operation, never in workflow code: at index time
(`embed_runs`: `update_index` with an embedder, and the index step of a `StepPersistence` save
that asks for hybrid ranking, inside its Temporal activity or DBOS step), or else by the search
that needs them (inside its activity or step): what is indexed and has no vector under the
embedder's model yet (a history indexed before hybrid was turned on is backfilled the same way)
is embedded in batches and stored (`VectorStorage`: the step store's `dr_vectors`, or this
process's memory for other sources). Only runs whose index row moved on are embedded again, and
of those only the positions whose text changed.

Vectors are keyed by the model's identity as the embedder reports it (provider, model name,
dimensions: `model_key`), the key a search computes from its query's embedding; index time learns
it from one probe query per process and embedder (`identity`), so a search with the same embedder
finds the vectors and embeds only its query, and another model never reads them.

What a process keeps between searches is tagged with the scope's index generation, as the
ranker's postings are: a warm search embeds the query, and scores it against a matrix it already
holds.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base import RunRecord
from ..index import (
    HASH_BYTES,
    IndexedRunRow,
    IndexStorage,
    VectorRow,
    VectorStorage,
    array_length,
    decode_ints,
    pack_floats,
)
from ..text import index_text
from ._corpus import Corpus
from ._damage import DAMAGE
from ._reads import Reader, summary_positions
from ._request import search_text
from ._shown_cache import ShownCache

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder, EmbeddingResult

__all__ = ('BATCH', 'MAX_TEXT_CHARS', 'SemanticIndex', 'identity', 'model_key')

BATCH = 64
"""Messages embedded per embedder call."""

MAX_TEXT_CHARS = 4000
"""What of a message, or of a query, is embedded: small models read a few hundred tokens, APIs bill for all of it."""

UPDATE_MESSAGES = 8 * BATCH
"""Messages whose runs `embed_runs` reads and embeds together: full batches (a chat's runs hold two
messages each), and a bound on what it holds in memory (an agent's runs hold hundreds)."""

_PROBE = 'durable-recall'
"""The query `identity` embeds to learn a model's name and dimensions."""

_MAX_IDENTITIES = 64

_ALL = object()

_identities: dict[int, tuple[Embedder, str, int]] = {}
"""Per embedder object (by id, the object held so the id stays its own): its model key and dimensions."""


def model_key(result: EmbeddingResult, dim: int) -> str:
    """The key vectors are stored under: provider, model name and dimensions, as the embedder reports them."""
    return f'{result.provider_name}:{result.model_name}:{dim}'


def _remember(embedder: Embedder, model: str, dim: int) -> None:
    _identities.pop(id(embedder), None)
    _identities[id(embedder)] = (embedder, model, dim)
    while len(_identities) > _MAX_IDENTITIES:
        del _identities[next(iter(_identities))]


async def identity(embedder: Embedder) -> tuple[str, int]:
    """The model key and dimensions of an embedder's vectors: what a search of it would compute.

    Known once this process has embedded a query with it; otherwise learnt from one probe query
    (a few milliseconds for the local default; one short request for an API).
    """
    known = _identities.get(id(embedder))
    if known is not None and known[0] is embedder:
        return known[1], known[2]
    found = await embedder.embed_query(_PROBE)
    dim = len(found.embeddings[0])
    model = model_key(found, dim)
    _remember(embedder, model, dim)
    return model, dim


@dataclass
class _Matrix:
    generation: str
    keys: list[int]
    vectors: Any  # numpy (documents x dim) float32, each row unit length (or zero)


class SemanticIndex:
    """Message vectors of a corpus under one embedder, and similarity of a query to them."""

    def __init__(self, corpus: Corpus, vectors: VectorStorage, embedder: Embedder, *, max_cached_scopes: int = 64):
        self._corpus = corpus
        self._vectors = vectors
        self._embedder = embedder
        self._reader = Reader(corpus, cache=ShownCache(max_messages=0), max_read_ahead=0)
        self._scopes: OrderedDict[tuple[object, str], _Matrix] = OrderedDict()
        self._keys: dict[str, int] = {}
        """The index run key each run's vectors were computed for here: a run id deleted and
        registered again (a new key) with as many messages is embedded again, not ranked by the
        vectors of what it held before (process memory is not told of a delete; a step store's
        own vector table is, and forgets them)."""
        self._max_scopes = max_cached_scopes
        self.embedded = 0
        """Messages this index has embedded (not counting queries): what catch-up cost."""

    async def similarity(self, query: str, conversation_id: str | None, *, all_scopes: bool) -> dict[int, float]:
        """Cosine similarity of `query` to each scope document with a vector (`run_key << 32 | position`)."""
        import numpy as np

        # What BM25 reads of it (`search_text`: 4 KiB, never a lone surrogate), cut as an indexed text is.
        found = await self._embedder.embed_query(search_text(query)[:MAX_TEXT_CHARS])
        probe = np.asarray(found.embeddings[0], dtype=np.float32)
        model = model_key(found, probe.shape[0])
        _remember(self._embedder, model, probe.shape[0])
        matrix = await self._matrix(model, probe.shape[0], conversation_id, all_scopes=all_scopes)
        if not matrix.keys:
            return {}
        norm = float(np.linalg.norm(probe))
        # einsum, not BLAS: no second thread pool beside the model's (1,000 x 384 is 0.3 ms on one core).
        scores = np.einsum('ij,j->i', matrix.vectors, probe / norm if norm > 0 else probe)
        return dict(zip(matrix.keys, scores.tolist(), strict=True))

    async def _matrix(self, model: str, dim: int, conversation_id: str | None, *, all_scopes: bool) -> _Matrix:
        storage: IndexStorage = self._corpus.storage
        status = await storage.status(conversation_id, all_scopes=all_scopes)
        key = (_ALL if all_scopes else conversation_id, model)
        cached = self._scopes.get(key)
        if cached is None or cached.generation != status.generation:
            rows = await storage.scope_runs(conversation_id, all_scopes=all_scopes)
            cached = self._scopes[key] = await self._build(model, dim, rows, status.generation)
        self._scopes.move_to_end(key)
        while len(self._scopes) > self._max_scopes:
            self._scopes.popitem(last=False)
        return cached

    async def embed_runs(self, rows: Sequence[IndexedRunRow]) -> int:
        """Embed and store what these runs' index rows hold and their vectors lack (index time).

        Returns:
            The messages embedded (the probe query aside).
        """
        before = self.embedded
        model, dim = await identity(self._embedder)
        chunk: list[IndexedRunRow] = []
        size = 0
        for row in rows:
            chunk.append(row)
            size += _own_positions(row)
            if size >= UPDATE_MESSAGES:
                await self._current_rows(model, dim, chunk)
                chunk, size = [], 0
        if chunk:
            await self._current_rows(model, dim, chunk)
        return self.embedded - before

    async def _current_rows(self, model: str, dim: int, rows: Sequence[IndexedRunRow]) -> dict[str, VectorRow]:
        """These runs' vector rows, current: read, and what is missing or behind embedded and stored."""
        stored = await self._vectors.load_vectors(model, [row.run_id for row in rows])
        current: dict[str, VectorRow] = {}
        stale: list[IndexedRunRow] = []
        for row in rows:
            held = stored.get(row.run_id)
            if held is not None and _current(held, row, dim) and self._keys.get(row.run_id, row.run_key) == row.run_key:
                current[row.run_id] = held
            else:
                stale.append(row)
        if stale:
            current.update(await self._catch_up(model, dim, stale, stored))
        return current

    async def _build(self, model: str, dim: int, rows: Sequence[IndexedRunRow], generation: str) -> _Matrix:
        import numpy as np

        current = await self._current_rows(model, dim, rows)
        keys: list[int] = []
        blocks: list[Any] = []
        for row in rows:
            held = current.get(row.run_id)
            if held is None:
                continue
            keys += [row.run_key << 32 | position for position in range(row.first, row.first + held.count)]
            blocks.append(np.frombuffer(held.vectors, dtype='<f4').reshape(held.count, dim))
        if not keys:
            return _Matrix(generation, [], np.zeros((0, dim), dtype=np.float32))
        matrix = np.concatenate(blocks).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        return _Matrix(generation, keys, matrix)

    async def _catch_up(
        self, model: str, dim: int, stale: Sequence[IndexedRunRow], stored: dict[str, VectorRow]
    ) -> dict[str, VectorRow]:
        """Vectors of runs whose rows are missing or behind: texts read, changed ones embedded, rows saved."""
        self._reader.unreadable = []  # a run that does not read is left without vectors, and retried
        full = await self._corpus.storage.load_runs([row.run_id for row in stale])
        records = await self._reader.records(list(full))
        texts: dict[str, list[str]] = {}
        seen: dict[str, int] = {}
        for run_id, row in full.items():
            record = records.get(run_id)
            read = await self._texts(record, row) if record is not None else None
            if read is not None:
                texts[run_id], seen[run_id] = read, row.seen
        # Reuse what a run's old row computed for the same text; embed the rest in batches.
        known: dict[bytes, bytes] = {}
        for run_id in texts:
            old = stored.get(run_id)
            if old is not None and old.well_formed() and old.dim == dim:
                size = dim * 4
                for i in range(old.count):
                    known[old.hashes[i * HASH_BYTES : (i + 1) * HASH_BYTES]] = old.vectors[i * size : (i + 1) * size]
        hashes = {run_id: [_hash(text) for text in run_texts] for run_id, run_texts in texts.items()}
        wanted: dict[bytes, str] = {}
        for run_id, run_texts in texts.items():
            for digest, text in zip(hashes[run_id], run_texts, strict=True):
                if digest not in known and text:
                    wanted.setdefault(digest, text)
        # Similar lengths batched together: a batch is padded to its longest text.
        order = sorted(wanted, key=lambda digest: len(wanted[digest]))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            result = await self._embedder.embed_documents([wanted[digest][:MAX_TEXT_CHARS] for digest in batch])
            for digest, vector in zip(batch, result.embeddings, strict=True):
                if len(vector) != dim:
                    raise ValueError(f'the embedder gave {len(vector)} dimensions after {dim}')
                known[digest] = pack_floats(vector)
            self.embedded += len(batch)
        zero = bytes(dim * 4)
        rows = [
            VectorRow(
                run_id=run_id,
                seen=seen[run_id],
                dim=dim,
                hashes=b''.join(hashes[run_id]),
                vectors=b''.join(known.get(digest, zero) for digest in hashes[run_id]),
            )
            for run_id in texts
        ]
        await self._vectors.save_vectors(model, rows)
        self._keys.update((row.run_id, full[row.run_id].run_key) for row in rows)
        return {row.run_id: row for row in rows}

    async def _texts(self, record: RunRecord, row: IndexedRunRow) -> list[str] | None:
        """The indexed text of each searchable position of a run (`None`: some of it does not read)."""
        try:
            seqs = decode_ints(row.seqs)
        except DAMAGE:
            return None
        size = len(seqs)
        asked = [(record, {position: seqs[position] for position in range(row.first, size)})]
        [messages] = await self._reader.decoded(asked, [summary_positions(row)], keys={record.run_id: row.run_key})
        if any(position not in messages for position in range(row.first, size)):
            return None
        return [index_text(messages[position]) for position in range(row.first, size)]


def _current(held: VectorRow, row: IndexedRunRow, dim: int) -> bool:
    try:
        size = array_length(row.lengths)
    except DAMAGE:
        return False
    return held.seen == row.seen and held.dim == dim and held.well_formed() and held.count == size - row.first


def _own_positions(row: IndexedRunRow) -> int:
    try:
        return max(array_length(row.lengths) - row.first, 1)
    except DAMAGE:
        return 1


def _hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=HASH_BYTES).digest()
