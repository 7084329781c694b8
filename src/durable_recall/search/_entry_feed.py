"""Catch-up's record feed over a SQL conversation store's entry log (for `ConversationCorpus`).

A run's index row keeps, in its `state`, the entry its record was read up to and the entry id of
every record position: catch-up walks from the run's head now back to that entry (one query, ids
only) and reads the bodies of only the new entries. Log numbers are positions; the run record's
token is new per registration, so a position's cached message never outlives the registration.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic_ai.messages import ModelMessage

from ..base import CorruptSnapshotError, RunRecord
from ..conversations import CorruptConversationError, LogRun
from ..history import message_hashes
from ..index import Folded, IndexedRunRow

if TYPE_CHECKING:
    from ._conversation_corpus import ConversationCorpus

__all__ = ('EntryFeed', 'decode_state', 'run_record')


class _View:
    """A run's record as catch-up reads it: its length, and the messages new since the index row."""

    def __init__(self, size: int, messages: Mapping[int, ModelMessage]) -> None:
        self._size = size
        self._messages = messages
        positions = sorted(messages)
        self._hashes = dict(zip(positions, message_hashes([messages[p] for p in positions]), strict=True))

    def __len__(self) -> int:
        return self._size

    def message(self, position: int) -> ModelMessage:
        return self._messages[position]

    def hash(self, position: int) -> str:
        return self._hashes[position]

    def seq(self, position: int) -> int:
        return position  # a run's entry ids by position are in its index state


def encode_state(head: str | None, depth: int, ids: Sequence[str]) -> bytes:
    return zlib.compress(json.dumps({'head': head, 'depth': depth, 'ids': list(ids)}).encode())


def decode_state(run_id: str, row: IndexedRunRow) -> tuple[str | None, int, list[str]]:
    try:
        state = json.loads(zlib.decompress(row.state))
        return state['head'], int(state['depth']), [str(entry_id) for entry_id in state['ids']]
    except (ValueError, KeyError, TypeError, zlib.error) as error:
        raise CorruptSnapshotError(run_id, row.seen, f'the index state does not read ({error})') from error


class EntryFeed:
    """Catch-up's record feed: each run's entries since its index row, from the entry log."""

    def __init__(self, corpus: ConversationCorpus) -> None:
        self._corpus = corpus

    async def records(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        return {run_id: run_record(run) for run_id, run in (await self._corpus.log_runs(run_ids)).items()}

    async def fold(self, run: RunRecord, row: IndexedRunRow | None) -> Folded:
        try:
            return await self._fold(run, row)
        except KeyError as error:
            # A concurrent save or delete released entries this registration reached: register again.
            self._corpus.stale[run.run_id] = run.conversation_id or ''
            raise CorruptSnapshotError(run.run_id, -1, f'entry {error} is gone; the conversation changed') from error
        except CorruptConversationError as error:
            raise CorruptSnapshotError(run.run_id, -1, str(error)) from error

    async def _fold(self, run: RunRecord, row: IndexedRunRow | None) -> Folded:
        corpus = self._corpus
        found = (await corpus.log.runs([run.run_id])).get(run.run_id)  # read after the row: never older than it
        if found is None:  # deleted or registered anew since catch-up listed it: look again
            corpus.stale[run.run_id] = run.conversation_id or ''
            raise CorruptSnapshotError(run.run_id, -1, 'the conversation changed while it was indexed')
        if row is None or not row.state:
            ids = await corpus.line(found)
            kept, messages = await corpus.messages(ids, 0)
            state = encode_state(found.head, found.skip + len(ids), kept)
            return Folded(_View(len(kept), messages), dict.fromkeys(messages), found.skip + len(ids), state)
        head, depth, kept = decode_state(run.run_id, row)
        if head == found.head:
            return Folded(_View(len(kept), {}), {}, row.seen, row.state)
        new = await corpus.log.walk(found.head, head) if head is not None and found.head is not None else None
        if new is None:
            corpus.stale[run.run_id] = run.conversation_id or ''
            raise CorruptSnapshotError(run.run_id, row.seen, 'the conversation was rewritten while it was indexed')
        added, messages = await corpus.messages(new, len(kept))
        kept += added
        state = encode_state(found.head, depth + len(new), kept)
        return Folded(_View(len(kept), messages), dict.fromkeys(messages), depth + len(new), state)


def run_record(run: LogRun) -> RunRecord:
    """The run record `ConversationStoreSource` gives for the same run, but for its token.

    The token names the registration: the index's log numbers are positions, and a process that
    cached a message of position 7 before a rewrite must not show it for the new position 7.
    """
    return RunRecord(
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        metadata=dict(run.metadata),
        started_at=run.started_at,
        token=run.token,  # as the source's (the conversation id) to the engine, but new per registration
    )
