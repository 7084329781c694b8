"""`durable-recall search`: the tool's search, from a terminal.

The answer comes from the very `Searcher` that `search_conversation_history` runs, over a
`SnapshotHistorySource` of the store, so the ranking, the scope rules, the excerpts and the wording
are the tool's. `--conversation C` is the tool's `scope='conversation'` for a run of conversation
`C`; `--all` is `scope='all'`. `--json` adds the ranked matches as data (see `_matches`).
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any, TextIO

from ..base import RunRecord
from ..history import HistorySource, RunHistory
from ..index import Bm25Params
from ..search import Searcher, SearchRequest, SearchScope, SnapshotHistorySource
from ..text import SEARCH_TOOL_NAME
from ._errors import CliError
from ._matches import match_records
from ._output import Progress, iso_time, write_json
from ._store import OpenedStore

__all__ = ('search_store',)

_PROGRESS_THRESHOLD = 20
_PARAMS = Bm25Params(k1=1.5, b=0.75)
_SKIP_TOOLS = frozenset({SEARCH_TOOL_NAME})


class _CountingSource:
    """The store's history source, reporting each run it reads to a progress bar.

    The first search of a large store reads and rebuilds every run in scope; this is where that
    time goes, so this is what the bar counts.
    """

    def __init__(self, inner: HistorySource, *, stream: TextIO, forced: bool, one_run: bool) -> None:
        self._inner = inner
        self._stream = stream
        self._forced = forced
        self._one_run = one_run
        self.progress: Progress | None = None

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        runs = await self._inner.list_runs(conversation_id=conversation_id)
        total = min(len(runs), 1) if self._one_run else len(runs)
        enabled = self._forced or (self._stream.isatty() and total > _PROGRESS_THRESHOLD)
        self.progress = Progress('reading runs', total, stream=self._stream, enabled=enabled)
        return runs

    async def run_history(self, run_id: str) -> RunHistory | None:
        history = await self._inner.run_history(run_id)
        if self.progress is not None:
            self.progress.advance()
        return history


async def search_store(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Search the store as the tool would and print its answer (or, with `--json`, the answer and matches)."""
    scope: SearchScope = 'all' if args.all else 'conversation'
    conversation_id: str | None = args.conversation
    await _check_targets(opened, conversation_id, args.run)
    request = SearchRequest(
        query=' '.join(args.query),
        run_id=args.run,
        roles=args.role or None,
        since=_time_flag('--since', args.since),
        until=_time_flag('--until', args.until),
        order=args.order,
    )
    source = SnapshotHistorySource(opened.store)
    counting = _CountingSource(source, stream=err, forced=args.progress, one_run=args.run is not None)
    searcher = Searcher(
        source=counting,
        params=_PARAMS,
        max_matches=args.max_matches,
        context_lines=args.context_lines,
        max_result_bytes=args.max_bytes,
        skip_tools=_SKIP_TOOLS,
    )
    try:
        outcome = await searcher.rank(request, scope=scope, conversation_id=conversation_id)
    finally:
        if counting.progress is not None:
            counting.progress.close()
    answer = outcome.answer(searcher)
    if not args.json:
        out.write(answer + '\n')
        return 0
    matches = match_records(outcome, _SKIP_TOOLS)
    document: dict[str, Any] = {
        'store': opened.label,
        'query': request.query,
        'scope': scope,
        'conversation_id': conversation_id,
        'run_id': request.run_id,
        'roles': request.roles,
        'since': request.since,
        'until': request.until,
        'order': request.order,
        'max_matches': args.max_matches,
        'context_lines': args.context_lines,
        'answer': answer,
        'matches': matches,
    }
    write_json(document, out)
    return 0


async def _check_targets(opened: OpenedStore, conversation_id: str | None, run_id: str | None) -> None:
    """Turn an operator's typo into an error; the tool's own answer would only say 'no history'."""
    if conversation_id is not None and not await opened.store.list_runs(conversation_id=conversation_id):
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    if run_id is None:
        return
    run = await opened.store.get_run(run_id)
    if run is None:
        raise CliError(f'no run {run_id!r} in {opened.label}: `durable-recall runs` lists the run ids')
    if conversation_id is not None and run.conversation_id != conversation_id:
        raise CliError(
            f'run {run_id!r} belongs to conversation {run.conversation_id!r}, not {conversation_id!r}: '
            'a conversation-scoped search never reaches another conversation'
        )


def _time_flag(flag: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace('Z', '+00:00'))
    except ValueError:
        raise CliError(f'{flag} {value!r} is not an ISO-8601 time such as 2026-01-31T09:30:00Z', status=2) from None
    return iso_time(moment if moment.tzinfo is not None else moment.astimezone())
