"""`durable-recall delete` and `durable-recall prune`: erase a conversation or a run, or every idle conversation.

Both say what they will remove before they remove it, then ask (`y/N`) when stdin is a terminal;
without a terminal they need `--yes`, so that a script never deletes by accident. After deleting,
the store is scrubbed (SQLite: the write-ahead log emptied; Postgres: `VACUUM FULL` of the touched
tables) so that no byte of what was deleted stays in the database's files; a scrub that could not
complete is reported, with exit status 1 (the rows are deleted all the same). docs/erasure.md has
the guarantees and the residual windows.
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from typing import TextIO

from ..stores import ConversationKeyStore, ErasableStore, ScrubReport, erase_conversation, erase_run, prune_idle
from ._errors import CliError
from ._output import write_json
from ._store import OpenedConversations, OpenedStore

__all__ = ('run_erasure',)


async def run_erasure(
    opened: OpenedStore | OpenedConversations, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    """Run `delete` or `prune` on either kind of store."""
    if isinstance(opened, OpenedConversations):
        if args.command == 'delete':
            return await _delete_record(opened, args, out, err)
        return await _prune_records(opened, args, out, err)
    if not isinstance(opened.store, ErasableStore):
        raise CliError(f'{opened.label} cannot erase (not a SQLite or Postgres step store)')
    if args.command == 'delete':
        return await _delete(opened, args, out, err)
    return await _prune(opened, args, out, err)


def _confirmed(args: argparse.Namespace, err: TextIO) -> bool:
    """`--yes`, or a `y` typed at the terminal; refuses to guess without a terminal."""
    if args.yes:
        return True
    if not sys.stdin.isatty():
        raise CliError('stdin is not a terminal, so there is no one to ask: pass --yes to delete')
    err.write('Proceed? [y/N] ')
    err.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer in ('y', 'yes'):
        return True
    err.write('nothing deleted\n')
    return False


def _age(age: timedelta) -> str:
    """`90d`, `12h`, ...: the age as the command line takes it."""
    seconds = int(age.total_seconds())
    for unit, size in (('w', 604800), ('d', 86400), ('h', 3600), ('m', 60)):
        if seconds % size == 0:
            return f'{seconds // size}{unit}'
    return f'{seconds}s'


def _report(scrub: ScrubReport | None, out: TextIO, err: TextIO) -> int:
    if scrub is None:
        return 0
    if scrub.complete:
        out.write(f'scrubbed: {scrub.detail}\n')
        return 0
    err.write(f'warning: scrub incomplete: {scrub.detail}\n')
    return 1


def _scrub_json(scrub: ScrubReport | None) -> dict[str, object] | None:
    return None if scrub is None else {'complete': scrub.complete, 'detail': scrub.detail}


async def _delete(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    store = opened.store
    if args.conversation is not None:
        runs = await store.list_runs(conversation_id=args.conversation)
        if not runs:
            return await _delete_keys_only(opened, args, out, err)
        err.write(
            f'{opened.label}: will delete conversation {args.conversation!r}: {len(runs)} run(s) '
            f'({", ".join(run.run_id for run in runs)}) with their snapshots, messages, search index entries, '
            'vectors and journal keys, then scrub the database files\n'
        )
        if not _confirmed(args, err):
            return 1
        erased = await erase_conversation(store, args.conversation)
        what = f'conversation {args.conversation!r}'
    else:
        record = await store.get_run(args.run)
        if record is None:
            raise CliError(f'no run {args.run!r} in {opened.label}: `durable-recall runs` lists them')
        snapshots = await store.list_snapshots(args.run, include_interrupted=True)
        err.write(
            f'{opened.label}: will delete run {args.run!r} of conversation {record.conversation_id!r}: its '
            f'{len(snapshots)} snapshot(s), messages, search index entries and vectors (runs that inherited its '
            'messages keep copies; the conversation is re-indexed without it), then scrub the database files\n'
        )
        if not _confirmed(args, err):
            return 1
        erased = await erase_run(store, args.run)
        what = f'run {args.run!r}'
    if args.json:
        write_json({'deleted_runs': list(erased.runs), 'scrub': _scrub_json(erased.scrub)}, out)
        return 0 if erased.scrub is None or erased.scrub.complete else 1
    out.write(f'{opened.label}: deleted {what}: {len(erased.runs)} run(s)\n')
    return _report(erased.scrub, out, err)


async def _delete_keys_only(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """A conversation with no runs in the store may still have journal keys (a conversation store's turns).

    Its journal payloads stay readable until its keys go, so `delete` deletes them (and scrubs);
    with neither runs nor keys there is no such conversation.
    """
    missing = f'no conversation {args.conversation!r} in {opened.label}: `durable-recall conversations` lists them'
    if not isinstance(opened.store, ConversationKeyStore):
        raise CliError(missing)
    err.write(
        f'{opened.label}: conversation {args.conversation!r} has no runs here: will delete its journal keys, '
        'if it has any, then scrub the database files\n'
    )
    if not _confirmed(args, err):
        return 1
    keys = await opened.store.delete_conversation_keys(args.conversation)
    if not keys:
        raise CliError(f'{missing} (no runs and no journal keys)')
    erased = await erase_conversation(opened.store, args.conversation)
    if args.json:
        write_json({'deleted_runs': [], 'deleted_keys': keys, 'scrub': _scrub_json(erased.scrub)}, out)
        return 0 if erased.scrub is None or erased.scrub.complete else 1
    out.write(f'{opened.label}: deleted the journal keys of conversation {args.conversation!r}: {keys} key(s)\n')
    return _report(erased.scrub, out, err)


async def _prune(opened: OpenedStore, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    idle_for = timedelta(seconds=args.idle_for)
    found = await prune_idle(opened.store, idle_for=idle_for, dry_run=True)
    names = [f'{c.conversation_id} (last active {c.last_activity:%Y-%m-%d %H:%M} UTC)' for c in found.conversations]
    if args.dry_run or not found.conversations:
        return _prune_listing(opened.label, names, args, out)
    err.write(
        f'{opened.label}: will delete {len(names)} conversation(s) idle for {_age(idle_for)}: {", ".join(names)}\n'
    )
    if not _confirmed(args, err):
        return 1
    pruned = await prune_idle(opened.store, idle_for=idle_for)
    if args.json:
        write_json(
            {'deleted': pruned.deleted, 'kept_active': list(pruned.kept), 'scrub': _scrub_json(pruned.scrub)}, out
        )
        return 0 if pruned.scrub is None or pruned.scrub.complete else 1
    out.write(f'{opened.label}: deleted {len(pruned.deleted)} conversation(s), {sum(pruned.deleted.values())} run(s)\n')
    if pruned.kept:
        out.write(f'kept (active again since the listing): {", ".join(pruned.kept)}\n')
    return _report(pruned.scrub, out, err)


def _prune_listing(label: str, names: list[str], args: argparse.Namespace, out: TextIO) -> int:
    """What a dry run (or a prune that finds nothing) prints."""
    if args.json:
        write_json({'would_delete': names}, out)
    elif names:
        out.write(f'{label}: would delete {len(names)} conversation(s):\n' + ''.join(f'  {name}\n' for name in names))
    else:
        out.write(f'{label}: no conversation idle for {_age(timedelta(seconds=args.idle_for))}\n')
    return 0


async def _delete_record(opened: OpenedConversations, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.conversation is None:
        raise CliError(f'{opened.label} is a conversation store: it has no runs; pass --conversation ID')
    record = await opened.store.read_record(args.conversation)
    if record is None:
        raise CliError(
            f'no conversation {args.conversation!r} in {opened.label}: `durable-recall conversations` lists them'
        )
    err.write(
        f'{opened.label}: will delete conversation {args.conversation!r} with its {len(record.branches)} branch(es), '
        'the entries no other conversation shares and its search index entries, then scrub the database files\n'
    )
    if not _confirmed(args, err):
        return 1
    await opened.store.delete_record(args.conversation, expected_revision=record.revision)
    scrub = await opened.store.scrub()
    if args.json:
        write_json({'deleted': [args.conversation], 'scrub': _scrub_json(scrub)}, out)
        return 0 if scrub.complete else 1
    out.write(f'{opened.label}: deleted conversation {args.conversation!r}\n')
    return _report(scrub, out, err)


async def _prune_records(opened: OpenedConversations, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..conversations import prune_idle_records  # pydantic-ai-slim>=2.68, as every conversation store

    idle_for = timedelta(seconds=args.idle_for)
    found = await prune_idle_records(opened.store, idle_for=idle_for, dry_run=True)
    names = [f'{c.conversation_id} (last saved {c.last_activity:%Y-%m-%d %H:%M} UTC)' for c in found.conversations]
    if args.dry_run or not names:
        return _prune_listing(opened.label, names, args, out)
    err.write(
        f'{opened.label}: will delete {len(names)} conversation(s) idle for {_age(idle_for)}: {", ".join(names)}\n'
    )
    if not _confirmed(args, err):
        return 1
    pruned = await prune_idle_records(opened.store, idle_for=idle_for)
    if args.json:
        write_json(
            {'deleted': list(pruned.deleted), 'kept_active': list(pruned.kept), 'scrub': _scrub_json(pruned.scrub)}, out
        )
        return 0 if pruned.scrub is None or pruned.scrub.complete else 1
    out.write(f'{opened.label}: deleted {len(pruned.deleted)} conversation(s)\n')
    if pruned.kept:
        out.write(f'kept (saved again since the listing): {", ".join(pruned.kept)}\n')
    return _report(pruned.scrub, out, err)
