"""Vectors at index time: `update_index` and `StepPersistence` embed, so a hybrid search embeds only its query.

Counted on the embedding model itself: a search after the catch-up asks it for the query's vector
and for no document's; another model never reads those vectors (it embeds the history anew under
its own name); a catch-up run again embeds nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import StepPersistence, update_index
from durable_recall.stores import StepStore

from .._services.stores import StoreKit
from ..search._stub import context, request
from ._kit import EXCHANGES, ConceptEmbeddingModel, chat, embedder, hybrid, needs_numpy
from .test_hybrid import blocks, vector_rows

pytestmark = [pytest.mark.anyio, needs_numpy]

ALL_TEXTS = sorted(text for exchange in EXCHANGES for text in exchange)


async def persisted_chat(store: StepStore, exchanges: Sequence[tuple[str, str]], **options: Any) -> None:
    """One run per exchange through `StepPersistence(**options)`, history threaded; no other catch-up."""
    replies = iter(answer for _, answer in exchanges)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(next(replies))])

    agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store=store, **options)])
    history: list[ModelMessage] | None = None
    for said, _ in exchanges:
        result = await agent.run(said, message_history=history, conversation_id='c1')
        history = result.all_messages()


async def test_after_update_index_a_search_embeds_only_its_query(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES, index=False)
    indexing = ConceptEmbeddingModel()
    await update_index(kit.store, embedder=embedder(indexing))
    assert sorted(indexing.documents) == ALL_TEXTS  # each message once, though later runs inherit it
    assert len(await vector_rows(kit)) == len(EXCHANGES)
    searching = ConceptEmbeddingModel()  # another process's embedder of the same model
    answer = await hybrid(kit.store, searching, context_lines=0).search(context(), request('car'))
    assert 'automobile' in blocks(answer)[0]
    assert searching.documents == []
    assert searching.queries == ['car']


async def test_a_second_update_index_embeds_nothing(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES[:3], index=False)
    model = ConceptEmbeddingModel()
    shared = embedder(model)
    await update_index(kit.store, 'c1', embedder=shared)
    probes = len(model.queries)
    assert probes == 1  # the model's name and dimensions, learnt once per process and embedder
    documents = len(model.documents)
    await update_index(kit.store, 'c1', embedder=shared)
    assert (len(model.documents), len(model.queries)) == (documents, probes)
    # New runs: only their own messages are embedded.
    await chat(kit.store, EXCHANGES[3:], index=False)
    await update_index(kit.store, embedder=shared)
    assert sorted(model.documents[documents:]) == sorted(text for exchange in EXCHANGES[3:] for text in exchange)


async def test_another_model_never_reads_the_vectors(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES, index=False)
    await update_index(kit.store, embedder=embedder(ConceptEmbeddingModel('concepts')))
    flipped = ConceptEmbeddingModel('concepts-flipped', flip=True)
    await hybrid(kit.store, flipped).search(context(), request('car'))
    assert sorted(flipped.documents) == ALL_TEXTS  # embedded anew under its own name
    models = {model for _, model, _ in await vector_rows(kit)}
    assert models == {'test:concepts:6', 'test:concepts-flipped:6'}


async def test_step_persistence_embeds_what_each_save_indexes(kit: StoreKit) -> None:
    saving = ConceptEmbeddingModel()
    await persisted_chat(kit.store, EXCHANGES, embedder=embedder(saving))
    assert sorted(saving.documents) == ALL_TEXTS
    assert (await kit.store.index_storage().status('c1', all_scopes=False)).pending == []
    searching = ConceptEmbeddingModel()
    answer = await hybrid(kit.store, searching, context_lines=0).search(context(), request('dog'))
    assert 'puppy' in blocks(answer)[0]
    assert (searching.documents, searching.queries) == ([], ['dog'])


async def test_a_failing_embedder_never_fails_the_save(kit: StoreKit, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger='durable_recall.persistence'):
        await persisted_chat(kit.store, EXCHANGES[:2], embedder=embedder(ConceptEmbeddingModel(fail=True)))
    assert 'indexing the snapshots just saved failed (ConnectionError)' in caplog.text
    assert await vector_rows(kit) == []
    # The index itself was committed before the embedder failed; the search embeds what lacks vectors.
    assert (await kit.store.index_storage().status('c1', all_scopes=False)).pending == []
    searching = ConceptEmbeddingModel()
    answer = await hybrid(kit.store, searching, context_lines=0).search(context(), request('car'))
    assert 'automobile' in blocks(answer)[0]
    assert sorted(searching.documents) == sorted(text for exchange in EXCHANGES[:2] for text in exchange)


async def test_deleting_a_conversation_deletes_the_vectors_update_index_stored(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES[:2], index=False)
    await chat(kit.store, EXCHANGES[2:3], conversation_id='kept', index=False)
    await update_index(kit.store, embedder=embedder())
    assert len(await vector_rows(kit)) == 3
    assert await kit.store.delete_conversation('c1') == 2
    assert len(await vector_rows(kit)) == 1


async def test_a_long_history_is_embedded_a_few_runs_at_a_time(kit: StoreKit, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr('durable_recall.search._semantic.UPDATE_MESSAGES', 3)  # two runs a read, not six
    await chat(kit.store, EXCHANGES, index=False)
    indexing = ConceptEmbeddingModel()
    await update_index(kit.store, 'c1', embedder=embedder(indexing))
    assert sorted(indexing.documents) == ALL_TEXTS
    searching = ConceptEmbeddingModel()
    await hybrid(kit.store, searching).search(context(), request('holiday'))
    assert searching.documents == []
