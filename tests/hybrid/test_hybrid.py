"""Hybrid ranking on every store: paraphrases found, scope kept, models apart, vectors backfilled and stored."""

from __future__ import annotations

import pytest

from durable_recall.stores import InMemoryStepStore

from .._services.stores import StoreKit
from ..search._stub import context, request
from ._kit import EXCHANGES, ConceptEmbeddingModel, bm25, chat, hybrid, needs_numpy

pytestmark = [pytest.mark.anyio, needs_numpy]


def blocks(answer: str) -> list[str]:
    return [block for block in answer.split('\n\n---\n\n') if '[score:' in block]


async def vector_rows(kit: StoreKit) -> list[tuple[str, str, int]]:
    """`(run_id, model, dim)` of every stored vector row (the memory store's through its storage)."""
    store = kit.store
    if isinstance(store, InMemoryStepStore):
        rows = store.vector_storage()._rows
        return sorted((run_id, model, row.dim) for (model, run_id), row in rows.items())
    found = await kit.query('SELECT run_id, model, dim FROM {vectors} ORDER BY run_id, model')
    return [(run_id, model, dim) for run_id, model, dim in found]


async def test_a_paraphrase_bm25_misses_is_found(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES)
    lexical = await bm25(kit.store).search(context(), request('car'))
    assert 'automobile' not in lexical
    answer = await hybrid(kit.store, context_lines=0).search(context(), request('car'))
    assert 'automobile' in blocks(answer)[0]
    # A lexical match still leads: the same words beat a paraphrase.
    answer = await hybrid(kit.store, context_lines=0).search(context(), request('quarterly report'))
    assert 'quarterly report' in blocks(answer)[0]


async def test_bm25_computes_and_stores_no_vectors(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES)
    tool = bm25(kit.store)
    await tool.search(context(), request('car'))
    assert await vector_rows(kit) == []


async def test_vectors_are_stored_per_model_and_never_mix(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES)
    straight = ConceptEmbeddingModel('concepts')
    flipped = ConceptEmbeddingModel('concepts-flipped', flip=True)
    await hybrid(kit.store, straight).search(context(), request('car'))
    await hybrid(kit.store, flipped).search(context(), request('car'))
    rows = await vector_rows(kit)
    models = {model for _, model, _ in rows}
    assert models == {'test:concepts:6', 'test:concepts-flipped:6'}
    assert len(rows) == 2 * len(EXCHANGES)
    # Each model reads its own vectors: a fresh search by each embeds nothing again.
    again = ConceptEmbeddingModel('concepts-flipped', flip=True)
    answer = await hybrid(kit.store, again, context_lines=0).search(context(), request('car'))
    assert again.documents == [] and 'automobile' in blocks(answer)[0]


async def test_vectors_of_history_indexed_before_hybrid_are_backfilled_then_kept(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES[:4])
    await bm25(kit.store).search(context(), request('report'))  # indexed, no vectors
    model = ConceptEmbeddingModel()
    await hybrid(kit.store, model).search(context(), request('car'))
    messages = 2 * 4
    assert len(model.documents) == messages  # every message once, though each run inherits the earlier ones
    # A cold process (a new capability) reads the stored vectors; new runs embed only their own messages.
    await chat(kit.store, EXCHANGES[4:], index=False)
    cold = ConceptEmbeddingModel()
    answer = await hybrid(kit.store, cold, context_lines=0).search(context(), request('dog'))
    assert 'puppy' in blocks(answer)[0]
    assert sorted(cold.documents) == sorted(text for exchange in EXCHANGES[4:] for text in exchange)
    assert cold.queries == ['dog']


async def test_the_scope_holds_on_the_similarity_side(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES)
    await chat(kit.store, [('my vehicle ZEBRA is a sedan, a car, an automobile', 'noted')], conversation_id='other')
    answer = await hybrid(kit.store).search(context(), request('car vehicle sedan'))
    assert 'ZEBRA' not in answer and 'conversation: other' not in answer
    assert 'red automobile' in answer
    # Roles filter the similarity side as they filter BM25's.
    answer = await hybrid(kit.store, context_lines=0).search(context(), request('car', roles=['assistant']))
    assert 'red automobile' not in answer
    # The other conversation's searches see nothing of this one, however near.
    answer = await hybrid(kit.store, context_lines=0).search(context('other'), request('doctor'))
    assert 'my physician' not in answer and '>[1] Assistant: noted' in answer


async def test_ties_break_in_corpus_order_and_rankings_repeat(kit: StoreKit) -> None:
    await chat(kit.store, [('first holiday', 'ok'), ('second vacation', 'ok'), ('third journey', 'ok')])
    tool = hybrid(kit.store, context_lines=0)
    first = await tool.search(context(), request('trip'))
    assert first == await tool.search(context(), request('trip'))
    order = [text for text in ('first holiday', 'second vacation', 'third journey') if text in first]
    assert order == ['first holiday', 'second vacation', 'third journey']
    # Equal fused scores; the replies, least similar and matching no word, are no match at all.
    assert ['[score: 0.5 |' in block for block in blocks(first)] == [True, True, True]


async def test_deleting_a_conversation_deletes_its_vectors(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES[:2])
    await chat(kit.store, EXCHANGES[2:3], conversation_id='kept')
    await hybrid(kit.store).search(context(), request('car'))
    await hybrid(kit.store).search(context('kept'), request('doctor'))
    assert len(await vector_rows(kit)) == 3
    assert await kit.store.delete_conversation('c1') == 2
    assert len(await vector_rows(kit)) == 1


async def test_scope_all_searches_every_conversation_by_meaning(kit: StoreKit) -> None:
    await chat(kit.store, EXCHANGES[:1])
    await chat(kit.store, [('my physician is on holiday', 'noted')], conversation_id='other')
    tool = hybrid(kit.store, scope='all', context_lines=0)
    answer = await tool.search(context(None), request('car doctor'))
    assert 'red automobile' in answer and 'my physician' in answer
