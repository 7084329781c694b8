"""`durable-recall show --conversation ID` on a step store: every run of one conversation, oldest first.

A step store keeps runs, and each run's record starts with the history it inherited (what the
previous run left in its context, after compaction). Printing every run's whole record would
print each message as many times as runs inherited it, so each run shows the messages it added:
its record after the leading messages the previous run's record already holds. Positions are the
run's own, the ones search results name with that run.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from ..base import CorruptSnapshotError
from ._errors import CliError
from ._inspect import count, message_json, message_lines, run_json
from ._output import field_lines, human_time, iso_time, terminal_width, write_json
from ._reading import RunSummary, read_run
from ._store import OpenedStore
from ._text import clean

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

__all__ = ('show_conversation',)


async def show_conversation(opened: OpenedStore, args: argparse.Namespace, out: TextIO) -> int:
    """Each run of the conversation with the messages it added (at its own positions); 1 if a run did not read."""
    conversation_id: str = args.conversation
    runs = await opened.store.list_runs(conversation_id=conversation_id)
    if not runs:
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    sections: list[tuple[Any, RunSummary | str, int]] = []
    previous: tuple[ModelMessage, ...] = ()
    for run in runs:
        try:
            summary = await read_run(opened.store, run)
        except CorruptSnapshotError as error:
            sections.append((run, str(error), 0))
            previous = ()
            continue
        inherited = _inherited(summary.record, previous)
        sections.append((run, summary, inherited))
        previous = summary.record
    unreadable = any(isinstance(summary, str) for _, summary, _ in sections)
    if args.json:
        write_json(
            {
                'store': opened.label,
                'conversation_id': conversation_id,
                'runs': [_run_json(run, summary, inherited) for run, summary, inherited in sections],
            },
            out,
        )
        return 1 if unreadable else 0
    width = terminal_width()
    lines = [
        *field_lines('conversation', conversation_id, width, indent=''),
        *field_lines(
            'runs',
            f'{count(len(runs), "run")}, oldest first; each shows the messages it added, at the positions search '
            'results give with its run id',
            width,
            indent='',
        ),
    ]
    for run, summary, inherited in sections:
        lines += ['', f'── run {clean(run.run_id)} · started {human_time(run.started_at)} UTC']
        if isinstance(summary, str):
            lines += field_lines('unreadable', summary, width)
            continue
        own = summary.record[inherited:]
        note = f'{count(len(own), "message")} added'
        if inherited:
            note += f' after {count(inherited, "inherited message")} (positions 0 to {inherited - 1}, not repeated)'
        lines += field_lines('record', note, width)
        digits = len(str(max(summary.record_size - 1, 0)))
        for position, message in enumerate(own, start=inherited):
            lines += message_lines(position, message, width, digits=digits)
    out.write('\n'.join(lines) + '\n')
    return 1 if unreadable else 0


def _inherited(record: tuple[ModelMessage, ...], previous: tuple[ModelMessage, ...]) -> int:
    """How many leading messages of `record` the previous run's record holds (what this run inherited)."""
    held = list(previous)
    inherited = 0
    for message in record:
        if message not in held:
            break
        inherited += 1
    return inherited


def _run_json(run: Any, summary: RunSummary | str, inherited: int) -> dict[str, Any]:
    if isinstance(summary, str):
        return {**run_json(run), 'error': summary, 'inherited': None, 'record': []}
    return {
        **run_json(run),
        'error': None,
        'last_saved_at': iso_time(summary.last_saved_at),
        'inherited': inherited,
        'record': [
            message_json(position, message)
            for position, message in enumerate(summary.record[inherited:], start=inherited)
        ],
    }
