"""A hybrid search embeds what BM25 reads of the query, cut as an indexed text is: never the whole of a huge one."""

from __future__ import annotations

import pytest
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from durable_recall import InMemoryStepStore
from durable_recall.search import SearchRequest
from durable_recall.search._request import MAX_QUERY_BYTES
from durable_recall.search._semantic import MAX_TEXT_CHARS

from ._kit import EXCHANGES, ConceptEmbeddingModel, chat, hybrid, needs_numpy

pytestmark = [pytest.mark.anyio, needs_numpy]


async def test_the_embedded_query_is_capped() -> None:
    store = InMemoryStepStore()
    await chat(store, EXCHANGES)
    model = ConceptEmbeddingModel()
    search = hybrid(store, model)
    ctx = RunContext[None](deps=None, model=TestModel(), usage=RunUsage(), conversation_id='c1')
    huge = 'automobile ' * 200_000 + 'lone \ud800 surrogate \x00 nul'
    answer = await search.search(ctx, SearchRequest(query=huge))
    assert 'automobile' in answer
    [embedded] = model.queries
    assert len(embedded) <= MAX_TEXT_CHARS and len(embedded.encode()) <= MAX_QUERY_BYTES
    assert embedded.startswith('automobile automobile')
    assert '\ud800' not in embedded and '\x00' not in embedded

    await search.search(ctx, SearchRequest(query='which physician did I see'))
    assert model.queries[-1] == 'which physician did I see'  # a short query is embedded whole
