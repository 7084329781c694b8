"""`durable-recall search`: the tool's search, from a terminal.

The answer comes from the very `SearchEngine` that `search_conversation_history` runs, over a
`SnapshotHistorySource` of the store, so the ranking, the scope rules, the excerpts and the wording
are the tool's, and the search catches the store's index up first, as the tool's does (its
progress bar counts the runs caught up). `--conversation C` is the tool's `scope='conversation'`
for a run of conversation `C`; `--all` is `scope='all'`. `--json` adds the ranked matches as data (see `_matches`).

`--ranking hybrid` is the tool's `ranking='hybrid'` with the local default embedder, and
`--embedder PROVIDER:MODEL` (which implies it) with `Embedder(PROVIDER:MODEL)`, made as `index
--embedder` makes it (`_embedder`): a step store's vectors are kept under the model's name, so a
search with the model `index` embedded with embeds only its query. A conversation store keeps no
vectors: there the search embeds its scope in this process, as the tool's hybrid search over it
does. Without the `semantic` extra the local default is a one-line error (exit status 1), not a
search quietly done by BM25 alone; so is a model name pydantic-ai cannot use.
"""

from __future__ import annotations

import argparse
from collections.abc import Generator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TextIO

from ..history import HistorySource
from ..index import DEFAULT_NEIGHBOURS, Bm25Params
from ..search import SearchEngine, SearchRequest, SearchScope, SnapshotHistorySource
from ..text import DEFAULT_SKIP_TOOLS
from ._embedder import hybrid_unavailable, model_name, named_embedder, wants_vectors
from ._errors import EXIT_USAGE, CliError
from ._matches import match_records
from ._output import Progress, iso_time, write_json
from ._reading import require_run
from ._store import OpenedStore

__all__ = ('LOADING_NOTE', 'loading_note', 'search_source', 'search_store')

_PROGRESS_THRESHOLD = 20


class _CatchUpBar:
    """A progress bar over the runs the search catches up (drawn once the engine reports the first batch).

    The first search of a store that was never indexed reads and indexes every run in scope; this
    is where its time goes, so this is what the bar counts.
    """

    def __init__(self, *, stream: TextIO, forced: bool) -> None:
        self._stream = stream
        self._forced = forced
        self._bar: Progress | None = None

    def advance(self, done: int, total: int) -> None:
        if self._bar is None:
            enabled = self._forced or (self._stream.isatty() and total > _PROGRESS_THRESHOLD)
            self._bar = Progress('indexing runs', total, stream=self._stream, enabled=enabled)
        self._bar.advance(done - self._bar.done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


async def search_store(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Search the store as the tool would and print its answer (or, with `--json`, the answer and matches)."""
    _check_ranking(args)
    await _check_targets(opened, args)
    return await search_source(SnapshotHistorySource(opened.store), opened.label, args, out, err)


async def search_source(source: HistorySource, label: str, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Search `source` with the tool's engine and print the answer; shared by step and conversation stores."""
    scope: SearchScope = 'all' if args.all else 'conversation'
    conversation_id: str | None = args.conversation
    request = SearchRequest(
        query=' '.join(args.query),
        run_id=args.run,
        roles=args.role or None,
        since=_time_flag('--since', args.since),
        until=_time_flag('--until', args.until),
        order=args.order,
    )
    _check_ranking(args)
    hybrid = wants_vectors(args)
    options: dict[str, Any] = {'stopwords': frozenset()} if args.every_word else {}
    if hybrid:
        options |= {'ranking': 'hybrid', 'embedder': named_embedder(args)}
        if args.hybrid_weight is not None:
            options['hybrid_weight'] = args.hybrid_weight
    try:
        engine = SearchEngine(
            source=source,
            params=Bm25Params(neighbours=() if args.bm25_alone else DEFAULT_NEIGHBOURS),
            max_matches=args.max_matches,
            context_lines=args.context_lines,
            max_result_bytes=args.max_bytes,
            skip_tools=DEFAULT_SKIP_TOOLS,
            **options,
        )
    except ImportError as error:
        raise hybrid_unavailable(
            error, args, otherwise='or search with --embedder PROVIDER:MODEL, or with --ranking bm25'
        ) from None
    bar = _CatchUpBar(stream=err, forced=args.progress)
    try:
        with loading_note(err, enabled=hybrid):
            outcome = await engine.rank(
                request, scope=scope, conversation_id=conversation_id, progress=bar.advance, count_matches=True
            )
    finally:
        bar.close()
    answer = outcome.answer(args.max_bytes)
    if not args.json:
        out.write(answer + '\n')
        return 0
    shown = outcome.shown(args.max_bytes)
    matches = match_records(outcome, DEFAULT_SKIP_TOOLS)[:shown]
    document: dict[str, Any] = {
        'store': label,
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
        'ranking': engine.ranking,
        'hybrid_weight': engine.hybrid_weight if engine.ranking == 'hybrid' else None,
        'embedder': model_name(args) if hybrid else None,
        'answer': answer,
        'total_matches': outcome.matched or 0,
        'shown_matches': len(matches),
        'matches': matches,
    }
    write_json(document, out)
    return 0


LOADING_NOTE = 'durable-recall: loading the embedding model and embedding messages not embedded yet...'
"""What a hybrid search says on a terminal while the model loads (seconds, the first time) and vectors are computed."""


@contextmanager
def loading_note(err: TextIO, *, enabled: bool) -> Generator[None]:
    """Show `LOADING_NOTE` on `err` while the block runs, when `enabled` and `err` is a terminal; then erase it.

    A hybrid search's first seconds go to loading the model and embedding the scope's messages,
    with nothing else to show: without a word the command would look stuck. Only a terminal
    gets the note (a script's stderr stays quiet), and the line is cleared once the work is done.
    """
    shown = enabled and err.isatty()
    if shown:
        err.write(LOADING_NOTE)
        err.flush()
    try:
        yield
    finally:
        if shown:
            err.write('\r' + ' ' * len(LOADING_NOTE) + '\r')
            err.flush()


def _check_ranking(args: argparse.Namespace) -> None:
    """Refuse a weight without hybrid ranking (it would be ignored), before anything is read."""
    if not wants_vectors(args) and args.hybrid_weight is not None:
        raise CliError('--hybrid-weight applies only with --ranking hybrid', status=EXIT_USAGE)


async def _check_targets(opened: OpenedStore, args: argparse.Namespace) -> None:
    """Turn an operator's typo into an error; the tool's own answer would only say 'no history'.

    A run id prefix is completed to the run's id, and `--run` alone searches as a run of its own
    conversation would (store-wide when the run has none): `args` is updated to say so.
    """
    conversation_id: str | None = args.conversation
    if conversation_id is not None and not await opened.store.list_runs(conversation_id=conversation_id):
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    if args.run is None:
        return
    run = await require_run(opened.store, args.run, opened.label)
    run_id = args.run = run.run_id
    if conversation_id is None and not args.all:
        args.conversation = run.conversation_id
        args.all = run.conversation_id is None
    if conversation_id is not None and run.conversation_id != conversation_id:
        raise CliError(
            f'run {run_id!r} belongs to conversation {run.conversation_id!r}, not {conversation_id!r}: '
            'a conversation-scoped search never reaches another conversation'
        )


def _time_flag(flag: str, value: str | None) -> str | None:
    """`--since`/`--until` as an ISO-8601 UTC string: a time without a zone is UTC, as every time shown is.

    Raises:
        CliError: (usage) The value is not an ISO-8601 time, or it names a moment outside what UTC can
            represent (year 1 to 9999).
    """
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace('Z', '+00:00'))
    except ValueError:
        raise CliError(
            f'{flag} {value!r} is not an ISO-8601 time such as 2026-01-31T09:30:00Z (no zone: UTC)', status=EXIT_USAGE
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
        moment.timestamp()
    except (OverflowError, ValueError, OSError):
        raise CliError(
            f'{flag} {value!r} is out of range: UTC times run from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z',
            status=EXIT_USAGE,
        ) from None
    return iso_time(moment)
