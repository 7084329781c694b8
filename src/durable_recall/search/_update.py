"""Catch-up ahead of searches: the BM25 index and, for hybrid ranking, the message vectors.

A hybrid search finds the vectors of what is indexed in the store, so it embeds only its query.
Without them, the first hybrid search of a process embeds every message it finds without a
vector, inside the activity or step a turn waits on (seconds for a few thousand messages on a
CPU). `update_index` with an embedder, and a `StepPersistence` save that indexes with one, pay
that cost where the history is written instead.

Vectors go in the step store's own vector table (`vector_storage()`), keyed by the model's
identity (`_semantic.identity`), which is what a search with the same embedder reads; a store
without one would keep nothing for a later search, so asking it to embed is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..index import IndexedRunRow, Progress, SnapshotReader, Unreadable, VectorStorage
from ..index import update_index as update_bm25
from ..stores import StepStore
from ._corpus import StoreCorpus
from ._embedding import Ranking, check_ranking, local_embedder
from ._fusion import DEFAULT_WEIGHT
from ._semantic import SemanticIndex

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder

__all__ = ('check_embedding', 'embed_indexed', 'embed_scope', 'update_index')


def check_embedding(ranking: Ranking | None, embedder: Embedder | None, store: object, owner: str) -> bool:
    """Whether to embed at index time; a configuration that cannot work refused, naming the value.

    `ranking=None` means hybrid when an embedder is given, else BM25 alone.

    Raises:
        ValueError, TypeError, ImportError: As `check_ranking`, or a store that keeps no vectors.
    """
    if ranking is None:
        ranking = 'hybrid' if embedder is not None else 'bm25'
    check_ranking(ranking, embedder, DEFAULT_WEIGHT)
    if ranking == 'bm25':
        return False
    if not isinstance(store, StepStore) or not isinstance(_vectors_of(store), VectorStorage):
        raise ValueError(
            f"{owner} with ranking='hybrid' embeds into the store's vector table, and {type(store).__name__} "
            'has none (no vector_storage()): use InMemoryStepStore, SqliteStepStore or PostgresStepStore, '
            'or leave the vectors to the searches.'
        )
    return True


async def embed_indexed(store: StepStore, embedder: Embedder | None, run_ids: Sequence[str]) -> int:
    """Embed what the store's index holds for these runs and no vector has (a save's index step).

    Runs inside the durable operation that calls it (the save's activity or step, or no engine
    at all): never in workflow code. The local default model loads here on first use.

    Returns:
        The messages embedded.
    """
    corpus = StoreCorpus(store)
    found = await corpus.storage.load_runs(run_ids)
    rows = [found[run_id] for run_id in dict.fromkeys(run_ids) if run_id in found]
    return await _embed(store, corpus, embedder, rows)


async def embed_scope(store: StepStore, embedder: Embedder | None, conversation_id: str | None) -> int:
    """Embed what the index holds for one conversation (`None`: the whole store) and no vector has.

    `update_index`'s second step, on its own for a caller that reports the count (the command
    line's `index --ranking hybrid`); the BM25 index is expected caught up first.

    Returns:
        The messages embedded (0 when every indexed message has a vector under the model).
    """
    corpus = StoreCorpus(store)
    rows = await corpus.storage.scope_runs(conversation_id, all_scopes=conversation_id is None)
    return await _embed(store, corpus, embedder, rows)


async def _embed(
    store: StepStore, corpus: StoreCorpus, embedder: Embedder | None, rows: Sequence[IndexedRunRow]
) -> int:
    vectors = _vectors_of(store)
    if not rows or not isinstance(vectors, VectorStorage):
        return 0
    model = embedder if embedder is not None else await local_embedder()
    return await SemanticIndex(corpus, vectors, model).embed_runs(rows)


async def update_index(
    store: SnapshotReader,
    conversation_id: str | None = None,
    *,
    progress: Progress | None = None,
    ranking: Ranking | None = None,
    embedder: Embedder | None = None,
) -> list[Unreadable]:
    """Bring a store's search index up to date with its snapshots, now rather than at the next search.

    Searches catch the index up themselves, so this is never required; it moves the cost out of
    the first search after a large import or a batch of runs (a worker can call it after each
    run, or a job after an import). With hybrid ranking it also embeds the indexed messages that
    have no vector under the embedder's model yet, in batches, and stores the vectors, so that a
    hybrid search with the same embedder embeds only its query.

    Args:
        store: The store `StepPersistence` writes to.
        conversation_id: Only this conversation's runs; `None` indexes every run in the store.
        progress: Called with the runs done and the runs in all, as batches of the BM25 index commit.
        ranking: `'hybrid'` to embed as well (the default when `embedder` is given), `'bm25'`
            for the BM25 index alone (the default otherwise).
        embedder: The `Embedder` the hybrid searches use; `None` with `ranking='hybrid'`: the
            local default of `durable-recall[semantic]`, as `ConversationSearch` uses it.

    Returns:
        Errors for runs whose snapshots could not be read (their index stays at the last
        snapshot that could; a later catch-up retries them).

    Raises:
        ValueError, TypeError, ImportError: A ranking configuration that cannot work, named (as
            `ConversationSearch` refuses it), or hybrid ranking on a store without a vector table.
        Exception: The embedder's own error (a provider's outage, a quota): the BM25 index is
            caught up by then, and the vectors stored so far are kept.
    """
    hybrid = check_embedding(ranking, embedder, store, 'update_index')
    problems = await update_bm25(store, conversation_id, progress=progress)
    if hybrid and isinstance(store, StepStore):
        await embed_scope(store, embedder, conversation_id)
    return problems


def _vectors_of(store: object) -> object:
    method = getattr(store, 'vector_storage', None)
    return method() if callable(method) else None
