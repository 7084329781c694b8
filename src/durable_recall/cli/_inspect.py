"""`conversations`, `runs` and `show`: what a store holds, with counts and times.

Listing conversations counts runs in the store (one grouped query on SQLite and Postgres; run
records elsewhere). Listing runs and showing one read each
run's snapshots and rebuild its record, which on a large store is the slow part: it reports
progress per run on stderr. Only `conversations` runs without pydantic-ai: the other two decode
messages, and import it when they do.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from ..base import CorruptSnapshotError, RunRecord
from ..stores import ConversationSummaries, summarize_conversations
from ..text import display_lines, message_role
from ._errors import CliError
from ._output import Progress, count, field_lines, human_time, iso_time, table, terminal_width, write_json
from ._reading import RunSummary, read_run, require_run
from ._store import OpenedStore
from ._text import clean

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('count', 'list_conversations', 'list_runs', 'message_json', 'message_lines', 'run_json', 'show_run')

_PROGRESS_THRESHOLD = 20
"""More runs than this, on a terminal, and reading them shows a progress bar."""

_SHOW_ALL: frozenset[str] = frozenset()
"""`show` displays the search tool's own calls and results too: the search skips them, an operator may not."""


def run_json(run: RunRecord) -> dict[str, Any]:
    """A run record's stable JSON fields."""
    return {
        'run_id': run.run_id,
        'conversation_id': run.conversation_id,
        'parent_run_id': run.parent_run_id,
        'agent_name': run.agent_name,
        'metadata': dict(run.metadata),
        'started_at': iso_time(run.started_at),
    }


async def list_conversations(opened: OpenedStore, args: argparse.Namespace, out: TextIO) -> int:
    """Each conversation, oldest first, with its run count and start times (counted by the store where it can)."""
    store = opened.store
    if isinstance(store, ConversationSummaries):
        rows, loose = await store.conversation_summaries()
    else:
        rows, loose = summarize_conversations(await store.list_runs())
    rows.sort(key=lambda row: (row.first_started_at, row.conversation_id))
    if args.json:
        items = [
            {
                'conversation_id': row.conversation_id,
                'runs': row.runs,
                'first_started_at': iso_time(row.first_started_at),
                'last_started_at': iso_time(row.last_started_at),
            }
            for row in rows
        ]
        write_json({'store': opened.label, 'conversations': items, 'runs_without_conversation': loose}, out)
        return 0
    if not rows:
        out.write(f'No conversations in {opened.label}.\n')
    else:
        headers = ('CONVERSATION', 'RUNS', 'FIRST STARTED (UTC)', 'LAST STARTED (UTC)')
        body = [
            (row.conversation_id, str(row.runs), human_time(row.first_started_at), human_time(row.last_started_at))
            for row in rows
        ]
        out.write('\n'.join(table(headers, body)) + '\n')
        runs = sum(row.runs for row in rows)
        out.write(f'\n{count(len(rows), "conversation")}, {count(runs, "run")} in {opened.label}\n')
    if loose:
        out.write(f'{count(loose, "run")} without a conversation id (see `runs --all`)\n')
    return 0


async def list_runs(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The runs of one conversation (or all), with snapshot and record counts and times."""
    conversation_id: str | None = args.conversation
    runs = await opened.store.list_runs(conversation_id=conversation_id)
    if conversation_id is not None and not runs:
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    summaries: list[RunSummary | str] = []
    enabled = args.progress or (err.isatty() and len(runs) > _PROGRESS_THRESHOLD)
    with Progress('reading runs', len(runs), stream=err, enabled=enabled) as progress:
        for run in runs:
            try:
                summaries.append(await read_run(opened.store, run))
            except CorruptSnapshotError as error:
                summaries.append(str(error))
            progress.advance()
    if args.json:
        items = [_summary_json(run, summary) for run, summary in zip(runs, summaries, strict=True)]
        write_json({'store': opened.label, 'conversation_id': conversation_id, 'runs': items}, out)
        return 0
    if not runs:
        out.write(f'No runs in {opened.label}.\n')
        return 0
    rows = _runs_table(runs, summaries, show_conversation=conversation_id is None, wide=args.wide)
    out.write('\n'.join(rows) + '\n')
    interrupted = sum(s.interrupted for s in summaries if isinstance(s, RunSummary))
    footer = f'\n{count(len(runs), "run")}'
    if interrupted:
        footer += f'; {count(interrupted, "interrupted snapshot")} (left out of the records)'
    out.write(footer + '\n')
    for run, summary in zip(runs, summaries, strict=True):
        if isinstance(summary, str):
            err.write(
                f'durable-recall: warning: run {run.run_id!r} could not be read: {clean(summary, layout=False)}\n'
            )
    return 0


async def show_run(opened: OpenedStore, args: argparse.Namespace, out: TextIO) -> int:
    """One run's details, snapshots, and rebuilt record with positions (the numbers search shows)."""
    if args.run_id is None:
        from ._show_conversation import show_conversation

        return await show_conversation(opened, args, out)
    run = await require_run(opened.store, args.run_id, opened.label)
    summary = await read_run(opened.store, run)
    if args.json:
        write_json(
            {
                'store': opened.label,
                'run': run_json(run),
                'snapshots': [
                    {
                        'index': s.index,
                        'step_index': s.step_index,
                        'state': s.state,
                        'saved_at': iso_time(s.saved_at),
                        'messages': s.size,
                    }
                    for s in summary.snapshots
                ],
                'record': [message_json(position, message) for position, message in enumerate(summary.record)],
            },
            out,
        )
        return 0
    width = terminal_width()
    lines = [
        *field_lines('run', clean(run.run_id, layout=False), width, indent=''),
        *field_lines('conversation', clean(run.conversation_id or '-', layout=False), width, indent=''),
        *field_lines('agent', clean(run.agent_name or '-', layout=False), width, indent=''),
        *field_lines('parent run', clean(run.parent_run_id or '-', layout=False), width, indent=''),
        *field_lines('started', f'{human_time(run.started_at)} UTC', width, indent=''),
        *field_lines(
            'snapshots',
            f'{summary.complete} complete, {summary.interrupted} interrupted; '
            + (f'last saved {human_time(summary.last_saved_at)} UTC' if summary.snapshots else 'none saved yet'),
            width,
            indent='',
        ),
        *field_lines(
            'record',
            f'{count(summary.record_size, "message")}, rebuilt from the complete snapshots '
            '(compaction markers left out); positions are the ones search results show',
            width,
            indent='',
        ),
        '',
    ]
    digits = len(str(max(summary.record_size - 1, 0)))
    for position, message in enumerate(summary.record):
        lines.extend(message_lines(position, message, width, digits=digits))
    out.write('\n'.join(lines) + '\n')
    return 0


def _summary_json(run: RunRecord, summary: RunSummary | str) -> dict[str, Any]:
    if isinstance(summary, str):
        return {**run_json(run), 'error': summary}
    return {
        **run_json(run),
        'snapshots': summary.complete,
        'interrupted_snapshots': summary.interrupted,
        'messages': summary.record_size,
        'last_saved_at': iso_time(summary.last_saved_at),
        'error': None,
    }


def _runs_table(
    runs: Sequence[RunRecord], summaries: Sequence[RunSummary | str], *, show_conversation: bool, wide: bool
) -> list[str]:
    headers = ['RUN ID', *(['CONVERSATION'] if show_conversation else []), 'AGENT', 'STARTED (UTC)']
    headers += ['SNAPSHOTS', 'MESSAGES', 'LAST SAVED (UTC)']
    rows: list[list[str]] = []
    for run, summary in zip(runs, summaries, strict=True):
        row = [run.run_id, *([run.conversation_id or '-'] if show_conversation else []), run.agent_name or '-']
        row.append(human_time(run.started_at, seconds=wide))
        if isinstance(summary, str):
            row += ['?', '?', 'unreadable']
        else:
            row += [str(summary.complete), str(summary.record_size), human_time(summary.last_saved_at, seconds=wide)]
        rows.append(row)
    # The ids are the wide columns (a Temporal run id is 73 characters): shortened in the middle to fit,
    # and times are to the minute; --wide prints them whole, to the second.
    shrink = (0, 1, 2) if show_conversation else (0, 1)  # the ids and the agent's name
    return table(headers, rows, max_width=None if wide else RUNS_WIDTH, shrink=shrink)


RUNS_WIDTH = 100
"""Columns `runs` keeps to unless `--wide`."""


def message_json(position: int, message: ModelMessage) -> dict[str, Any]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    return {
        'position': position,
        'role': message_role(message),
        'timestamp': iso_time(message.timestamp),
        'lines': display_lines(message, (), skip_tools=_SHOW_ALL),
        'message': ModelMessagesTypeAdapter.dump_python([message], mode='json')[0],
    }


def message_lines(position: int, message: ModelMessage, width: int, *, digits: int) -> list[str]:
    head = f'{f"[{position}]":<{digits + 2}} {message_role(message):<9} {human_time(message.timestamp)}'
    lines = [head]
    for line in display_lines(message, (), skip_tools=_SHOW_ALL):
        lines.extend(_indented(line, width))
    return lines


def _indented(text: str, width: int) -> list[str]:
    wrapped: list[str] = []
    for paragraph in text.splitlines() or ['']:
        wrapped.extend(textwrap.wrap(paragraph, width=width - 4, break_on_hyphens=False) or [''])
    return ['    ' + line for line in wrapped]
