"""`durable-recall index`: catch a store's search index up now, instead of at the next search."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from ..base import CorruptSnapshotError
from ..index import Bm25Params, Indexer
from ._errors import CliError
from ._inspect import count
from ._output import write_json
from ._store import OpenedConversations, OpenedStore

__all__ = ('index_conversations', 'index_store')


async def index_store(opened: OpenedStore, args: argparse.Namespace, out: TextIO) -> int:
    """Index the runs with snapshots the index has not read (one conversation, or the whole store).

    Returns 1 when a run could not be read (named on the output; the rest is indexed).

    Raises:
        CliError: `--conversation` names a conversation the store does not hold (as `runs` and
            `search` report it: a typo must not look like an index that is up to date).
    """
    indexer = Indexer.of_store(opened.store)
    conversation_id = None if args.all else args.conversation
    if conversation_id is not None and not await opened.store.list_runs(conversation_id=conversation_id):
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    status = await indexer.storage.status(conversation_id, all_scopes=args.all)
    began = time.perf_counter()
    problems = await indexer.catch_up(status.pending)
    seconds = time.perf_counter() - began
    after = await indexer.storage.status(conversation_id, all_scopes=args.all)
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
            },
            out,
        )
    else:
        where = 'the whole store' if args.all else f'conversation {conversation_id!r}'
        out.write(
            f'{opened.label}: indexed {count(len(status.pending) - len(unreadable), "run")} of {where} in '
            f'{seconds:.1f}s; {count(after.docs, "searchable message")}\n'
        )
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
