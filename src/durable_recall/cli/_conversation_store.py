"""`conversations`, `show` and `search` on a conversation store (`drc_*` tables) instead of a step store.

A conversation store keeps each conversation as one history (plus the branches it left), not as
runs with snapshots. The commands read it the way `ConversationStoreSource` shows it to the search
tool, so what they number and find is what `search_conversation_history` would:

* `conversations` lists the stored conversations: scope, messages in the live history, branches,
  last save;
* `show ID` prints one "run" of the source: a conversation id shows its live history, and
  `ID#branch:ENTRY` (the run ids search results name) one branch's own messages, each at the
  position search results use;
* `search` runs the tool's engine over `ConversationStoreSource(store)`; `--conversation ID` searches
  as a run of that conversation would, `--all` the whole store.

* `index` catches the store's search index up (it lives in the store's database, as a step
  store's does; searches catch it up by themselves too).

`runs` and `check` are step-store commands: a conversation store has no runs with snapshots.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import TextIO

from ..conversations import ConversationStoreSource
from ..history import RunHistory
from ._errors import CliError
from ._inspect import count, message_json, message_lines
from ._output import field_lines, human_time, iso_time, table, terminal_width, write_json
from ._search import search_source
from ._store import OpenedConversations

__all__ = ('run_on_conversation_store',)

_BRANCH = '#branch:'
"""How `ConversationStoreSource` names a branch's run: `<conversation id>#branch:<tip entry id>`."""


async def run_on_conversation_store(
    opened: OpenedConversations, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    """Run `conversations`, `show` or `search` on a conversation store; refuse the step-store commands."""
    if args.command == 'conversations':
        return await _list(opened, args, out)
    if args.command == 'show':
        return await _show(opened, args, out)
    if args.command == 'search':
        source = ConversationStoreSource(opened.store)
        await _check_targets(opened, source, args.conversation, args.run)
        if args.run is not None and args.conversation is None and not args.all:
            args.conversation = args.run.partition(_BRANCH)[0]  # --run alone: as a run of its own conversation
        return await search_source(source, opened.label, args, out, err)
    if args.command == 'index':
        from ._index import index_conversations

        return await index_conversations(opened, args, out)
    what = 'lists runs and their snapshots' if args.command == 'runs' else "verifies a step store's snapshots"
    raise CliError(
        f'{opened.label} is a conversation store (drc_* tables): `{args.command}` {what}, which only a step store '
        'has. Use `conversations`, `show CONVERSATION_ID`, `search` and `index`; pass --kind steps if the database '
        'also holds a step store.'
    )


async def _list(opened: OpenedConversations, args: argparse.Namespace, out: TextIO) -> int:
    """Each conversation, least recently saved first, with its scope, message and branch counts."""
    records = sorted(await opened.store.list_conversations(), key=lambda r: (r.updated_at, r.conversation_id))
    sizes = [len(await opened.store.read_history(record.head_id)) for record in records]
    if args.json:
        items = [
            {
                'conversation_id': record.conversation_id,
                'scope': record.scope,
                'messages': size,
                'branches': len(record.branches),
                'forked_from': record.forked_from,
                'revision': record.revision,
                'updated_at': iso_time(record.updated_at),
            }
            for record, size in zip(records, sizes, strict=True)
        ]
        write_json({'store': opened.label, 'kind': 'conversations', 'conversations': items}, out)
        return 0
    if not records:
        out.write(f'No conversations in {opened.label}.\n')
        return 0
    headers = ('CONVERSATION', 'SCOPE', 'MESSAGES', 'BRANCHES', 'LAST SAVED (UTC)')
    body = [
        (r.conversation_id, r.scope or '-', str(size), str(len(r.branches)), human_time(r.updated_at))
        for r, size in zip(records, sizes, strict=True)
    ]
    out.write('\n'.join(table(headers, body)) + '\n')
    total = sum(sizes)
    out.write(
        f'\n{count(len(records), "conversation")}, {count(total, "message")} in {opened.label} (a conversation store)\n'
    )
    return 0


async def _show(opened: OpenedConversations, args: argparse.Namespace, out: TextIO) -> int:
    """One conversation's live history, or one branch's own messages, numbered as search results number them."""
    run_id: str = args.run_id if args.run_id is not None else args.conversation
    conversation_id, _, tip = run_id.partition(_BRANCH)
    record = await opened.store.read_record(conversation_id)
    history = await _run_history(ConversationStoreSource(opened.store), run_id) if record is not None else None
    if record is None or history is None:
        raise CliError(
            f'no conversation {run_id!r} in {opened.label}: `durable-recall conversations` lists them '
            f'(a branch is shown as CONVERSATION_ID{_BRANCH}ENTRY_ID, as search results name it)'
        )
    messages = list(history.messages)
    which = f'branch ending at entry {tip}' if tip else 'the live history'
    if args.json:
        write_json(
            {
                'store': opened.label,
                'kind': 'conversations',
                'conversation': {
                    'conversation_id': record.conversation_id,
                    'run_id': run_id,
                    'history': 'branch' if tip else 'live',
                    'scope': record.scope,
                    'revision': record.revision,
                    'updated_at': iso_time(record.updated_at),
                    'branches': [f'{record.conversation_id}{_BRANCH}{entry}' for entry in record.branches],
                    'forked_from': record.forked_from,
                },
                'record': [message_json(position, message) for position, message in enumerate(messages)],
            },
            out,
        )
        return 0
    width = terminal_width()
    lines = [
        *field_lines('conversation', record.conversation_id, width, indent=''),
        *field_lines('scope', record.scope or '-', width, indent=''),
        *field_lines('last saved', f'{_time(record.updated_at)} (revision {record.revision})', width, indent=''),
        *field_lines('branches', _branches(record.conversation_id, record.branches), width, indent=''),
        *field_lines(
            'history',
            f'{which}: {count(len(messages), "message")} (compaction markers left out); positions are the ones '
            'search results show',
            width,
            indent='',
        ),
        '',
    ]
    digits = len(str(max(len(messages) - 1, 0)))
    for position, message in enumerate(messages):
        lines.extend(message_lines(position, message, width, digits=digits))
    out.write('\n'.join(lines) + '\n')
    return 0


async def _check_targets(
    opened: OpenedConversations, source: ConversationStoreSource, conversation_id: str | None, run_id: str | None
) -> None:
    """Turn an operator's typo into an error; the tool's own answer would only say 'no history'."""
    if conversation_id is not None and await opened.store.read_record(conversation_id) is None:
        raise CliError(
            f'no conversation {conversation_id!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    if run_id is None:
        return
    if await _run_history(source, run_id) is None:
        raise CliError(
            f'no conversation or branch {run_id!r} in {opened.label}: pass a conversation id, or '
            f'CONVERSATION_ID{_BRANCH}ENTRY_ID as search results name a branch'
        )
    owner = run_id.partition(_BRANCH)[0]
    if conversation_id is not None and owner != conversation_id:
        raise CliError(
            f'{run_id!r} belongs to conversation {owner!r}, not {conversation_id!r}: '
            'a conversation-scoped search never reaches another conversation'
        )


async def _run_history(source: ConversationStoreSource, run_id: str) -> RunHistory | None:
    """A run of the source; its conversation is listed first, which is how the source learns a branch's owner."""
    await source.list_runs(conversation_id=run_id.partition(_BRANCH)[0])
    return await source.run_history(run_id)


def _branches(conversation_id: str, tips: list[str]) -> str:
    if not tips:
        return 'none'
    return ', '.join(f'{conversation_id}{_BRANCH}{tip}' for tip in tips)


def _time(moment: datetime) -> str:
    return f'{human_time(moment)} UTC'
