"""Reading back what an answer shows: run records and log entries, with what does not read named.

Ranking reads only the index; an answer then reads the records and messages of the windows it
shows. A row that does not decode (a corrupt run row, a corrupt message body) must not fail the
search: it is retried run by run, the run that does not read is named in `unreadable` (the answer
says so), and the rest is shown.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pydantic_ai.messages import ModelMessage

from ..base import CorruptRunError, CorruptSnapshotError, MessageDecodeError, RunRecord
from ..index import ROLE_NAMES, IndexedRunRow, Unreadable, decode_ints
from ._corpus import Corpus
from ._damage import DAMAGE
from ._shown import Shown, StoredMessage
from ._shown_cache import ShownCache

__all__ = ('Reader', 'summary_positions')


_Key = tuple[str, str, int]
"""What identifies one registration of a run: its id, its record's token, and its index run key."""


class Reader:
    """Reads records and messages from a corpus, keeping recently shown messages and what failed.

    What it keeps is keyed by the run's registration (`_Key`) and log number. A run id deleted and
    registered again restarts its log numbers, and its token may well be the same (an application
    that passes `run_id=`, a conversation id reused after a delete), so the key holds the run's key
    in the index too: every index hands a registration a key no earlier run had (see
    `SqliteIndexWriter.put_run`, `MemoryIndex`, and Postgres's identity column), and a message
    cached for one registration is never shown for another's content.
    """

    def __init__(self, corpus: Corpus, *, cache: ShownCache | None = None, max_read_ahead: int = 2048) -> None:
        """A reader of `corpus`, keeping shown messages in `cache` (its own, of the default bounds, if none is given).

        Args:
            corpus: What it reads.
            cache: Shown messages, possibly shared with the engine's other readers (`ShownCache`).
            max_read_ahead: Bodies read ahead and not shown yet that it keeps (beyond, it drops them all).
        """
        self._corpus = corpus
        self._shown = ShownCache() if cache is None else cache
        self._max_ahead = max_read_ahead
        self._ahead: dict[tuple[_Key, int], StoredMessage] = {}
        """Bodies read ahead with the last read, for the windows an answer is likely to show next."""
        self.unreadable: list[Unreadable] = []
        """What could not be read since the owner last reset it."""

    async def records(self, run_ids: Sequence[str], *, ahead: Sequence[str] = ()) -> dict[str, RunRecord]:
        """These runs' records (one read; run by run if a row does not read, which is then named).

        `ahead`'s records are read along when there is a read to make, and left out if one does not read.
        """
        if not run_ids:
            return {}
        try:
            return await self._corpus.get_runs([*run_ids, *ahead])
        except CorruptRunError:
            pass
        records: dict[str, RunRecord] = {}
        for run_id in run_ids:
            try:
                records.update(await self._corpus.get_runs([run_id]))
            except CorruptRunError as error:
                self.unreadable.append(error)
        return records

    async def messages(
        self,
        asked: Sequence[tuple[RunRecord, Mapping[int, int]]],
        summaries: Sequence[Collection[int]] = (),
        *,
        keys: Mapping[str, int],
        ahead: Sequence[tuple[RunRecord, Collection[int]]] = (),
    ) -> list[dict[int, Shown]]:
        """Record messages by position, per run asked, from recent answers or one read of the corpus.

        A position in the run's `summaries` (the index's `summary` role) is the summary its log
        entry carries (`summary_view`); any other is the entry with compaction artifacts removed.
        A warm process re-shows messages, so they are cached, keyed by the run's registration
        (see the class docstring), since a deleted run id registered again reuses log numbers.

        Args:
            asked: Per run, its record and the log numbers of the positions wanted.
            summaries: Per run asked, its summary positions.
            keys: The index run key of each run asked or read ahead, by run id.
            ahead: Log numbers (per run) an answer is likely to ask for next: when this call has to
                read anyway, they are read in the same round trip, kept as they are stored (not
                prepared: the answer may stop before them) until the next call asks for them.
        """
        cache = self._shown
        views = [
            (run, seqs, summaries[index] if index < len(summaries) else ()) for index, (run, seqs) in enumerate(asked)
        ]
        # What the cache holds is taken now, not looked up after the read: a search of another
        # conversation sharing the cache may evict it while this one waits for the store.
        held: dict[tuple[_Key, int, bool], Shown] = {}
        unread: dict[str, dict[int, set[bool]]] = {}
        for run, seqs, summary in views:
            token = _key(run, keys)
            for position, seq in seqs.items():
                key = (token, seq, position in summary)
                message = cache.get(key)
                if message is not None:
                    held[key] = message
                else:
                    unread.setdefault(run.run_id, {}).setdefault(seq, set()).add(position in summary)
        if unread:
            tokens = {run.run_id: _key(run, keys) for run, _, _ in views}
            found = await self._read_logs(unread, tokens, self._read_ahead(ahead, unread, keys))
            for run_id, shown in found.items():
                for (seq, summary), item in shown.items():
                    key = (tokens[run_id], seq, summary)
                    held[key] = item
                    cache.put(key, item)
        out: list[dict[int, Shown]] = []
        for run, seqs, summary in views:
            token = _key(run, keys)
            messages: dict[int, Shown] = {}
            for position, seq in seqs.items():
                message = held.get((token, seq, position in summary))
                if message is not None:
                    messages[position] = message
            out.append(messages)
        return out

    async def decoded(
        self,
        asked: Sequence[tuple[RunRecord, Mapping[int, int]]],
        summaries: Sequence[Collection[int]] = (),
        *,
        keys: Mapping[str, int],
    ) -> list[dict[int, ModelMessage]]:
        """`messages` as pydantic-ai messages (a run one of which does not decode is named and left out)."""
        out: list[dict[int, ModelMessage]] = []
        for (run, _), shown in zip(asked, await self.messages(asked, summaries, keys=keys), strict=True):
            try:
                out.append({position: item.message for position, item in shown.items()})
            except MessageDecodeError as error:
                self.unreadable.append(CorruptSnapshotError(run.run_id, -1, str(error)))
                out.append({})
        return out

    def _read_ahead(
        self,
        ahead: Sequence[tuple[RunRecord, Collection[int]]],
        unread: Mapping[str, Mapping[int, object]],
        keys: Mapping[str, int],
    ) -> dict[str, tuple[_Key, set[int]]]:
        """The log numbers to read ahead (per run: its registration, its numbers), none already at hand or asked."""
        out: dict[str, tuple[_Key, set[int]]] = {}
        for run, seqs in ahead:
            asked = unread.get(run.run_id, {})
            key = _key(run, keys)
            for seq in seqs:
                if seq in asked or (key, seq) in self._ahead:
                    continue
                if (key, seq, False) in self._shown:
                    continue
                out.setdefault(run.run_id, (key, set()))[1].add(seq)
        return out

    async def _read_logs(
        self,
        unread: dict[str, dict[int, set[bool]]],
        tokens: Mapping[str, _Key],
        ahead: Mapping[str, tuple[_Key, set[int]]],
    ) -> dict[str, dict[tuple[int, bool], Shown]]:
        """Log entries in one read, ready to show as asked (`unread`: run, log number, whether as its summary).

        Entries read ahead earlier are taken from there; `ahead`'s entries are read along and kept
        as stored. A run whose read fails is read again alone, without what was to be read ahead
        (damage there is named when it is asked for, not before); a run one of whose bodies does
        not read, or does not decode, is named in `unreadable` and not shown.
        """
        kept = self._ahead
        if len(kept) > self._max_ahead:
            kept.clear()  # a bound: what an answer read ahead and never showed
        found: dict[str, dict[int, StoredMessage]] = {}
        wanted: dict[str, list[int]] = {}
        for run_id, seqs in unread.items():
            for seq in sorted(seqs):
                body = kept.pop((tokens[run_id], seq), None)
                if body is None:
                    wanted.setdefault(run_id, []).append(seq)
                else:
                    found.setdefault(run_id, {})[seq] = body
        if wanted:
            reading = {run_id: set(seqs) for run_id, seqs in wanted.items()}
            for run_id, (_, seqs) in ahead.items():
                reading.setdefault(run_id, set()).update(seqs)
            try:
                read = await self._corpus.read_stored({run_id: sorted(seqs) for run_id, seqs in reading.items()})
            except CorruptSnapshotError:
                read = await self._read_apart(wanted)
            for run_id, stored in read.items():
                asked = set(wanted.get(run_id, ()))
                for seq, body in stored.items():
                    if seq in asked:
                        found.setdefault(run_id, {})[seq] = body
                    elif run_id in ahead:
                        self._ahead[ahead[run_id][0], seq] = body
        out: dict[str, dict[tuple[int, bool], Shown]] = {}
        for run_id, stored in found.items():
            try:
                out[run_id] = {
                    (seq, summary): Shown.of(stored[seq], summary=summary)
                    for seq, flags in unread[run_id].items()
                    if seq in stored
                    for summary in flags
                }
            except MessageDecodeError as error:
                self.unreadable.append(CorruptSnapshotError(run_id, -1, str(error)))
        return out

    async def _read_apart(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, StoredMessage]]:
        """`wanted`, run by run: a run whose read fails is named in `unreadable` and left out."""
        found: dict[str, dict[int, StoredMessage]] = {}
        for run_id, seqs in wanted.items():
            try:
                found.update(
                    {key: dict(value) for key, value in (await self._corpus.read_stored({run_id: seqs})).items()}
                )
            except CorruptSnapshotError as error:
                self.unreadable.append(error)
        return found


def _key(run: RunRecord, keys: Mapping[str, int]) -> _Key:
    """The run's registration (its index key must be given: there is no safe default)."""
    return (run.run_id, run.token, keys[run.run_id])


_SUMMARY = ROLE_NAMES.index('summary')


def summary_positions(row: IndexedRunRow) -> frozenset[int]:
    """The record positions of a run that hold compaction summaries (none where its roles do not decode).

    Damaged roles are noted where the search filters on them; here the messages read back plainly.
    """
    try:
        roles = decode_ints(row.roles)
    except DAMAGE:
        return frozenset()
    return frozenset(position for position, role in enumerate(roles) if role == _SUMMARY)
