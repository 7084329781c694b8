"""An answer reads the windows it may show next with the ones it shows now, and never shows more for it.

An answer's windows are read in batches (the first few hits, then as many more as the room left
may hold). Each batch that reads also reads the next windows' runs and stored messages, unprepared,
so the next batch usually reads nothing. These check that the answers are unchanged, that a search
needing two batches reads the message log once, that nothing is read twice, and that damage in
a window read ahead but never shown is not named (it is named when a window that shows it is asked for).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from benchmarks._script import generate_conversation, make_queries
from benchmarks.histories import write_conversation
from pydantic_ai import messages as m

from durable_recall import ConversationSearch, SnapshotHistorySource
from durable_recall.base import CorruptSnapshotError
from durable_recall.search import SearchRequest, _ranking
from durable_recall.search._reads import Reader
from durable_recall.search._shown import StoredMessage
from durable_recall.stores import RunRecord, StepStore

from ._stub import context

pytestmark = pytest.mark.anyio


def _log_reader(store: StepStore) -> str:
    """The store method an answer's message reads go through."""
    return 'read_log_bodies' if hasattr(store, 'read_log_bodies') else 'read_logs'


async def test_a_search_reads_its_windows_at_once(store: StepStore, monkeypatch: pytest.MonkeyPatch) -> None:
    conversation = generate_conversation(13, 200, conversation_id='c-ahead')
    await write_conversation(store, conversation, window=12)
    ctx = context(conversation_id='c-ahead')
    # The generated prose queries pair a common word with two that a small conversation may not
    # hold: every word is searched (`stopwords=()`), so that each query has hits to read.
    queries = make_queries(conversation, 12, 13)
    expected = [
        await ConversationSearch(SnapshotHistorySource(store), scope='conversation', stopwords=()).search(
            ctx, SearchRequest(query=query)
        )
        for query in queries
    ]

    method = _log_reader(store)
    original_read = getattr(store, method)
    reads: list[dict[str, list[int]]] = []

    async def counting_read(wanted: Mapping[str, Sequence[int]]) -> Any:
        reads.append({run_id: list(seqs) for run_id, seqs in wanted.items()})
        return await original_read(wanted)

    original_load = _ranking.Ranker.load
    loads: list[int] = []

    async def counting_load(self: Any, *args: Any, **kwargs: Any) -> Any:
        loads.append(1)
        return await original_load(self, *args, **kwargs)

    monkeypatch.setattr(store, method, counting_read)
    monkeypatch.setattr(_ranking.Ranker, 'load', counting_load)
    for query, answer in zip(queries, expected, strict=True):
        reads.clear()
        loads.clear()
        cold = ConversationSearch(SnapshotHistorySource(store), scope='conversation', stopwords=())
        assert await cold.search(ctx, SearchRequest(query=query)) == answer
        read = [(run_id, seq) for wanted in reads for run_id, seqs in wanted.items() for seq in seqs]
        assert len(read) == len(set(read)), 'a log entry was read twice'
        assert len(loads) == 1, 'the windows of every chosen hit are read in one batch'
        assert len(reads) <= len(loads)


def _record(run_id: str) -> RunRecord:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    return RunRecord(run_id=run_id, conversation_id='c', started_at=started, token=f't-{run_id}')


def _message(text: str) -> m.ModelMessage:
    return m.ModelRequest(parts=[m.UserPromptPart(text, timestamp=datetime(2026, 1, 1, tzinfo=UTC))])


class _Corpus:
    """Stored messages by run; reading run `bad` raises, as a body that does not decode does."""

    def __init__(self) -> None:
        self.reads: list[dict[str, list[int]]] = []

    async def get_runs(self, run_ids: Sequence[str]) -> dict[str, RunRecord]:
        return {run_id: _record(run_id) for run_id in run_ids}

    async def read_stored(self, wanted: Mapping[str, Sequence[int]]) -> dict[str, dict[int, StoredMessage]]:
        self.reads.append({run_id: list(seqs) for run_id, seqs in wanted.items()})
        if 'bad' in wanted:
            raise CorruptSnapshotError('bad', -1, 'a body does not decode')
        return {run_id: {seq: _message(f'{run_id} {seq}') for seq in seqs} for run_id, seqs in wanted.items()}


KEYS = {'good': 1, 'later': 2, 'bad': 3}
"""The runs' index keys."""


async def test_messages_read_ahead_are_shown_without_another_read() -> None:
    corpus = _Corpus()
    reader = Reader(corpus)  # pyright: ignore[reportArgumentType]
    good, later = _record('good'), _record('later')
    [shown] = await reader.messages([(good, {0: 0, 1: 1})], keys=KEYS, ahead=[(later, [3, 4])])
    assert sorted(shown) == [0, 1]
    assert corpus.reads == [{'good': [0, 1], 'later': [3, 4]}]
    [shown] = await reader.messages([(later, {0: 3, 1: 4})], keys=KEYS)
    assert [item.message for item in shown.values()] == [_message('later 3'), _message('later 4')]
    assert len(corpus.reads) == 1
    assert reader.unreadable == []


async def test_damage_read_ahead_is_named_only_when_shown() -> None:
    corpus = _Corpus()
    reader = Reader(corpus)  # pyright: ignore[reportArgumentType]
    good, bad = _record('good'), _record('bad')
    [shown] = await reader.messages([(good, {0: 0})], keys=KEYS, ahead=[(bad, [1])])
    assert list(shown) == [0]
    assert reader.unreadable == []  # read again without the window ahead: nothing named yet
    assert corpus.reads == [{'good': [0], 'bad': [1]}, {'good': [0]}]
    [shown] = await reader.messages([(bad, {0: 1})], keys=KEYS)
    assert shown == {}
    assert [error.run_id for error in reader.unreadable if isinstance(error, CorruptSnapshotError)] == ['bad']
