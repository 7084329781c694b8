"""Reading back what an answer shows: run records and log entries, with what does not read named.

Ranking reads only the index; an answer then reads the records and messages of the windows it
shows. A row that does not decode (a corrupt run row, a corrupt message body) must not fail the
search: it is retried run by run, the run that does not read is named in `unreadable` (the answer
says so), and the rest is shown.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

from pydantic_ai.messages import ModelMessage

from ..base import CorruptRunError, CorruptSnapshotError, RunRecord
from ..history import strip_artifacts
from ..index import Unreadable
from ._corpus import Corpus

__all__ = ('Reader',)


class Reader:
    """Reads records and messages from a corpus, keeping recently shown messages and what failed."""

    def __init__(self, corpus: Corpus, *, max_cached_messages: int = 2048) -> None:
        self._corpus = corpus
        self._shown: OrderedDict[tuple[str, str, int], ModelMessage] = OrderedDict()
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

    async def messages(self, asked: Sequence[tuple[RunRecord, Mapping[int, int]]]) -> list[dict[int, ModelMessage]]:
        """Record messages by position, per run asked, from recent answers or one read of the corpus.

        A warm process re-shows messages, so they are cached; keyed by the run's token too, since a
        deleted run id registered again reuses log numbers.
        """
        cache = self._shown
        unread: dict[str, list[int]] = {}
        for run, seqs in asked:
            missing = [seq for seq in seqs.values() if (run.run_id, run.token, seq) not in cache]
            if missing:
                unread.setdefault(run.run_id, []).extend(missing)
        if unread:
            tokens = {run.run_id: run.token for run, _ in asked}
            for run_id, found in (await self._read_logs(unread)).items():
                for seq, message in found.items():
                    cache[run_id, tokens[run_id], seq] = strip_artifacts(message) or message
        out: list[dict[int, ModelMessage]] = []
        for run, seqs in asked:
            messages: dict[int, ModelMessage] = {}
            for position, seq in seqs.items():
                key = (run.run_id, run.token, seq)
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
