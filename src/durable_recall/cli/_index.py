"""`durable-recall index`: catch a store's search index up now, instead of at the next search."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from ..base import CorruptSnapshotError
from ..index import Indexer
from ._errors import CliError
from ._output import write_json
from ._store import OpenedStore

__all__ = ('index_store',)


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
        {'run_id': e.run_id, 'snapshot': e.index if isinstance(e, CorruptSnapshotError) else None, 'reason': e.reason}
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
            f'{opened.label}: indexed {len(status.pending) - len(unreadable)} run(s) of {where} in {seconds:.1f}s; '
            f'{after.docs} searchable messages\n'
        )
        for problem in unreadable:
            where = '' if problem['snapshot'] is None else f', snapshot {problem["snapshot"]}'
            out.write(f'  unreadable: run {problem["run_id"]}{where}: {problem["reason"]}\n')
    return 1 if unreadable else 0
