"""`durable-recall index`: catch a store's search index up now, instead of at the next search.

With `--ranking hybrid` (or `--embedder MODEL`, which implies it) it then embeds the indexed
messages that have no vector under the model yet, as `update_index(store, ranking='hybrid')`
does, so that a later hybrid search with the same model embeds only its query. Only a step store
keeps vectors (its `dr_vectors`); a conversation store's hybrid searches keep them in process
memory, so the flags are refused there rather than ignored.

pydantic-ai and the search layer load only for the embedding: a plain `index` of a current
index reads rows alone.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, TextIO

from ..base import CorruptSnapshotError
from ..index import Bm25Params, Indexer
from ._embedder import hybrid_unavailable, model_name, named_embedder, wants_vectors
from ._errors import CliError
from ._inspect import count
from ._output import write_json
from ._store import OpenedConversations, OpenedStore

if TYPE_CHECKING:
    from pydantic_ai.embeddings import Embedder

__all__ = ('index_conversations', 'index_store')


async def index_store(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Index the runs with snapshots the index has not read (one conversation, or the whole store); embed if asked.

    Returns 1 when a run could not be read (named on the output; the rest is indexed and embedded).

    Raises:
        CliError: `--conversation` names a conversation the store does not hold (as `runs` and
            `search` report it: a typo must not look like an index that is up to date); the
            embedding was asked for and cannot work (a missing extra, a model pydantic-ai does
            not know), refused before anything is indexed; or the embedder failed.
    """
    indexer = Indexer.of_store(opened.store)
    conversation_id = None if args.all else args.conversation
    if conversation_id is not None and not await opened.store.list_runs(conversation_id=conversation_id):
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    hybrid = wants_vectors(args)
    embedder = _checked_embedder(args, opened) if hybrid else None
    status = await indexer.storage.status(conversation_id, all_scopes=args.all)
    began = time.perf_counter()
    problems = await indexer.catch_up(status.pending)
    seconds = time.perf_counter() - began
    after = await indexer.storage.status(conversation_id, all_scopes=args.all)
    embedded: int | None = None
    embedding_seconds = 0.0
    if hybrid:
        began = time.perf_counter()
        embedded = await _embed(opened, embedder, conversation_id, model_name(args), err)
        embedding_seconds = time.perf_counter() - began
    unreadable = [
        {
            'run_id': e.run_id,
            'snapshot': e.index if isinstance(e, CorruptSnapshotError) and e.index >= 0 else None,
            'reason': e.reason,
        }
        for e in problems
    ]
    if args.json:
        write_json(
            {
                'runs_caught_up': len(status.pending) - len(unreadable),
                'unreadable': unreadable,
                'documents': after.docs,
                'seconds': round(seconds, 3),
                'embedder': model_name(args) if hybrid else None,
                'embedded': embedded,
                'embedding_seconds': round(embedding_seconds, 3) if hybrid else None,
            },
            out,
        )
    else:
        where = 'the whole store' if args.all else f'conversation {conversation_id!r}'
        out.write(
            f'{opened.label}: indexed {count(len(status.pending) - len(unreadable), "run")} of {where} in '
            f'{seconds:.1f}s; {count(after.docs, "searchable message")}\n'
        )
        if embedded:
            out.write(
                f'{opened.label}: embedded {count(embedded, "message")} with {model_name(args)} in '
                f'{embedding_seconds:.1f}s, for hybrid search\n'
            )
        elif hybrid:
            out.write(f'{opened.label}: no message needed embedding: each has a vector from {model_name(args)}\n')
        for problem in unreadable:
            where = '' if problem['snapshot'] is None else f', snapshot {problem["snapshot"]}'
            out.write(f'  unreadable: run {problem["run_id"]}{where}: {problem["reason"]}\n')
    return 1 if unreadable else 0


async def index_conversations(opened: OpenedConversations, args: argparse.Namespace, out: TextIO) -> int:
    """Catch a conversation store's search index up (it lives in the store's database); 1 if something did not read.

    The catch-up is the one every search runs first: a search with no words catches the scope up
    and ranks nothing.
    """
    # Loaded only for this store: the conversation layer needs a newer pydantic-ai, and the search loads it.
    from ..conversations import ConversationStoreSource
    from ..search import SearchEngine, SearchRequest

    if wants_vectors(args):
        raise CliError(
            f'{opened.label} is a conversation store, which keeps no vectors (hybrid searches over it embed '
            'in their own process): --ranking hybrid and --embedder embed at index time into a step store only'
        )
    conversation_id = None if args.all else args.conversation
    if conversation_id is not None and await opened.store.read_record(conversation_id) is None:
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    engine = SearchEngine(
        source=ConversationStoreSource(opened.store),
        params=Bm25Params(),
        max_matches=1,
        context_lines=0,
        max_result_bytes=4096,
        skip_tools=(),
    )
    began = time.perf_counter()
    outcome = await engine.rank(
        SearchRequest(query=''), scope='all' if args.all else 'conversation', conversation_id=conversation_id
    )
    seconds = time.perf_counter() - began
    if args.json:
        write_json(
            {
                'store': opened.label,
                'kind': 'conversations',
                'unreadable': outcome.unreadable,
                'seconds': round(seconds, 3),
            },
            out,
        )
    else:
        where = 'the whole store' if args.all else f'conversation {conversation_id!r}'
        out.write(f'{opened.label}: caught the search index of {where} up in {seconds:.1f}s (a conversation store)\n')
        for problem in outcome.unreadable:
            out.write(f'  unreadable: {problem}\n')
    return 1 if outcome.unreadable else 0


def _checked_embedder(args: argparse.Namespace, opened: OpenedStore) -> Embedder | None:
    """`--embedder`'s `Embedder` (`None`: the local default), refused now if it cannot work.

    Raises:
        CliError: The name does not make a model (`named_embedder`), the package hybrid ranking
            needs is missing, or the store keeps no vectors.
    """
    from ..search import check_embedding

    embedder = named_embedder(args)
    try:
        check_embedding('hybrid', embedder, opened.store, 'index --ranking hybrid')
    except ImportError as error:
        raise hybrid_unavailable(error, args, otherwise='or embed with --embedder PROVIDER:MODEL') from None
    except (ValueError, TypeError) as error:
        raise CliError(str(error)) from None
    return embedder


async def _embed(
    opened: OpenedStore, embedder: Embedder | None, conversation_id: str | None, model: str, err: TextIO
) -> int:
    """Embed the scope's indexed messages that have no vector under the model; the count.

    Raises:
        CliError: The embedder failed (a provider's outage, a key it refused): the BM25 index is
            caught up by then, and the vectors stored so far are kept for the next attempt.
    """
    from ..search import embed_scope
    from ._search import loading_note

    try:
        with loading_note(err, enabled=True):
            return await embed_scope(opened.store, embedder, conversation_id)
    except Exception as error:
        raise CliError(
            f'embedding with {model} failed ({type(error).__name__}: {error}); the search index is caught up '
            'and the vectors stored so far are kept: run the command again to embed the rest'
        ) from error
