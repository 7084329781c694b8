"""A conversation-scoped search lists the conversation's runs only when a block's window leaves its hit's run.

Windows walk the conversation's record across runs (`search._windows`), which needs every run's
span. A window that stays inside its hit's run is the same without them, so a cold search whose
hits all sit well inside long runs reads no spans. Either way the answers equal the in-memory
corpus's. An index that reads a search's status, postings and spans in one statement (Postgres,
`ScopeViews`) has no read to save: its spans come with the status, and no search lists them apart.
"""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks._script import generate_conversation, make_queries
from benchmarks.histories import write_conversation

from durable_recall import ConversationSearch, SnapshotHistorySource
from durable_recall.index import ScopeViews
from durable_recall.search import SearchRequest
from durable_recall.stores import StepStore

from ._stub import context
from .test_index_agreement import Plain

pytestmark = pytest.mark.anyio


async def _spans_read(store: StepStore, monkeypatch: pytest.MonkeyPatch, context_lines: int) -> list[bool]:
    """Per query: whether a cold search read the spans (its answer checked against the in-memory corpus)."""
    conversation = generate_conversation(17, 240, conversation_id='c-spans')
    await write_conversation(store, conversation, window=40)
    ctx = context(conversation_id='c-spans')
    storage_type = type(store.index_storage())
    original = storage_type.scope_spans
    calls: list[str | None] = []

    async def counting(self: Any, conversation_id: str | None) -> Any:
        calls.append(conversation_id)
        return await original(self, conversation_id)

    monkeypatch.setattr(storage_type, 'scope_spans', counting)
    if isinstance(store.index_storage(), ScopeViews):
        original_view = getattr(storage_type, 'view')  # noqa: B009  # not on the protocol's type

        async def viewing(self: Any, conversation_id: str | None, **kwargs: Any) -> Any:
            found = await original_view(self, conversation_id, **kwargs)
            if found.spans is not None:
                calls.append(conversation_id)
            return found

        monkeypatch.setattr(storage_type, 'view', viewing)
    # Every word searched (`stopwords=()`): a generated query's common word gives it hits to show.
    # BM25 alone: neighbour weighting walks the record, so it reads the spans whatever the windows.
    options: dict[str, Any] = {
        'context_lines': context_lines,
        'max_matches': 2,
        'stopwords': (),
        'neighbour_weights': (),
    }
    plain = ConversationSearch(Plain(store), scope='conversation', **options)
    read: list[bool] = []
    for query in make_queries(conversation, 10, 17):
        ask = SearchRequest(query=query)
        calls.clear()
        cold = ConversationSearch(SnapshotHistorySource(store), scope='conversation', **options)
        assert await cold.search(ctx, ask) == await plain.search(ctx, ask), query
        read.append(bool(calls))
    return read


async def test_windows_inside_their_runs_read_no_spans(store: StepStore, monkeypatch: pytest.MonkeyPatch) -> None:
    read = await _spans_read(store, monkeypatch, context_lines=1)
    if isinstance(store.index_storage(), ScopeViews):
        assert all(read), 'a cold search reads the spans with its status, in the same statement'
        return
    assert not all(read), 'every query had a hit at a run boundary: the test no longer covers the skip'


async def test_windows_longer_than_a_run_read_the_spans(store: StepStore, monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(await _spans_read(store, monkeypatch, context_lines=400))
