"""Reading back what an answer shows: run records and log entries, with what does not read named.

Ranking reads only the index; an answer then reads the records and messages of the windows it
shows. A row that does not decode (a corrupt run row, a corrupt message body) must not fail the
search: it is retried run by run, the run that does not read is named in `unreadable` (the answer
says so), and the rest is shown.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence

from pydantic_ai.messages import ModelMessage

from ..base import CorruptRunError, CorruptSnapshotError, RunRecord
from ..history import strip_artifacts, summary_view
from ..index import ROLE_NAMES, IndexedRunRow, Unreadable, decode_ints
from ._corpus import Corpus
from ._damage import DAMAGE

__all__ = ('Reader', 'summary_positions')


class Reader:
    """Reads records and messages from a corpus, keeping recently shown messages and what failed."""

    def __init__(self, corpus: Corpus, *, max_cached_messages: int = 2048) -> None:
        self._corpus = corpus
        self._shown: OrderedDict[tuple[str, str, int, bool], ModelMessage] = OrderedDict()
        self._max_shown = max_cached_messages
        self.unreadable: list[Unreadable] = []
        """What could not be read since the owner last reset it."""

    async def records(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        """These runs' records (one read; run by run if a row does not read, which is then named)."""
        if not run_ids:
            return {}
        try:
            return await self._corpus.get_runs(run_ids)
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
        self, asked: Sequence[tuple[RunRecord, Mapping[int, int]]], summaries: Sequence[Collection[int]] = ()
    ) -> list[dict[int, ModelMessage]]:
        """Record messages by position, per run asked, from recent answers or one read of the corpus.

        A position in the run's `summaries` (the index's `summary` role) is the summary its log
        entry carries (`summary_view`); any other is the entry with compaction artifacts removed.
        A warm process re-shows messages, so they are cached; keyed by the run's token too, since a
        deleted run id registered again reuses log numbers.
        """
        cache = self._shown
        views = [
            (run, seqs, summaries[index] if index < len(summaries) else ()) for index, (run, seqs) in enumerate(asked)
        ]
        unread: dict[str, set[int]] = {}
        for run, seqs, summary in views:
            for position, seq in seqs.items():
                if (run.run_id, run.token, seq, position in summary) not in cache:
                    unread.setdefault(run.run_id, set()).add(seq)
        if unread:
            wanted = {run_id: sorted(seqs) for run_id, seqs in unread.items()}
            found = await self._read_logs(wanted)
            for run, seqs, summary in views:
                stored = found.get(run.run_id, {})
                for position, seq in seqs.items():
                    message = stored.get(seq)
                    if message is not None:
                        cache[run.run_id, run.token, seq, position in summary] = _view(message, position in summary)
        out: list[dict[int, ModelMessage]] = []
        for run, seqs, summary in views:
            messages: dict[int, ModelMessage] = {}
            for position, seq in seqs.items():
                key = (run.run_id, run.token, seq, position in summary)
                message = cache.get(key)
                if message is not None:
                    cache.move_to_end(key)
                    messages[position] = message
            out.append(messages)
        while len(cache) > self._max_shown:
            cache.popitem(last=False)
        return out

    async def _read_logs(self, wanted: dict[str, list[int]]) -> dict[str, dict[int, ModelMessage]]:
        """Log entries in one read; run by run if a body does not decode (that run is then named, not shown)."""
        try:
            return await self._corpus.read_logs(wanted)
        except CorruptSnapshotError:
            pass
        out: dict[str, dict[int, ModelMessage]] = {}
        for run_id, seqs in wanted.items():
            try:
                out.update(await self._corpus.read_logs({run_id: seqs}))
            except CorruptSnapshotError as error:
                self.unreadable.append(error)
        return out


def _view(message: ModelMessage, summary: bool) -> ModelMessage:
    """A stored message as the record holds it: its summary view, or without compaction artifacts."""
    if summary:
        return summary_view(message) or message
    return strip_artifacts(message) or message


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
