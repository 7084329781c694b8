"""Hybrid ranking's configuration errors at construction, and answers (never exceptions) at search time."""

from __future__ import annotations

import pytest
from pydantic_ai.embeddings import Embedder

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence, update_index
from durable_recall.stores import InMemoryStepStore

from ..search._stub import context, request
from ._kit import EXCHANGES, HAS_SEMANTIC, ConceptEmbeddingModel, chat, embedder, hybrid, needs_numpy

pytestmark = pytest.mark.anyio


def source() -> SnapshotHistorySource:
    return SnapshotHistorySource(InMemoryStepStore())


def test_an_unknown_ranking_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="ranking must be 'bm25' or 'hybrid', got 'semantic'"):
        ConversationSearch(source(), scope='conversation', ranking='semantic')  # pyright: ignore[reportArgumentType]


def test_an_embedder_with_bm25_is_refused() -> None:
    with pytest.raises(ValueError, match=r"embedder=.* is only used with ranking='hybrid'"):
        ConversationSearch(source(), scope='conversation', embedder=embedder())


@needs_numpy
def test_an_embedder_that_is_not_an_embedder_is_refused() -> None:
    with pytest.raises(
        TypeError, match='embedder must be a pydantic_ai.embeddings.Embedder, got ConceptEmbeddingModel'
    ):
        ConversationSearch(
            source(),
            scope='conversation',
            ranking='hybrid',
            embedder=ConceptEmbeddingModel(),  # pyright: ignore[reportArgumentType]
        )


@pytest.mark.parametrize(
    ('weight', 'error'), [(1.5, ValueError), (-0.1, ValueError), ('0.5', TypeError), (True, TypeError)]
)
def test_a_weight_outside_0_to_1_is_refused(weight: object, error: type[Exception]) -> None:
    with pytest.raises(error, match='hybrid_weight'):
        ConversationSearch(source(), scope='conversation', ranking='hybrid', hybrid_weight=weight)  # pyright: ignore[reportArgumentType]


@pytest.mark.skipif(HAS_SEMANTIC, reason='the semantic extra is installed: the local default is available')
def test_hybrid_without_an_embedder_or_the_extra_names_the_extra() -> None:
    with pytest.raises(ImportError, match=r'durable-recall\[semantic\]'):
        ConversationSearch(source(), scope='conversation', ranking='hybrid')


@pytest.mark.skipif(not HAS_SEMANTIC, reason='the semantic extra (durable-recall[semantic]) is absent')
def test_hybrid_without_an_embedder_loads_nothing_at_construction() -> None:
    tool = ConversationSearch(source(), scope='conversation', ranking='hybrid')
    assert tool.embedder is None and tool.ranking == 'hybrid'


@needs_numpy
def test_the_capabilities_combine_only_when_their_rankings_agree() -> None:
    shared = source()
    plain = ConversationSearch(shared, scope='conversation')
    with pytest.raises(Exception, match="'ranking'"):
        ConversationSearch.combine(
            [
                plain,
                ConversationSearch(
                    shared, scope='conversation', ranking='hybrid', embedder=Embedder(ConceptEmbeddingModel())
                ),
            ]
        )


@needs_numpy
async def test_a_failing_embedder_answers_by_words_alone_and_says_so() -> None:
    store = InMemoryStepStore()
    await chat(store, EXCHANGES)
    answer = await hybrid(store, ConceptEmbeddingModel(fail=True), context_lines=0).search(
        context(), request('quarterly report')
    )
    assert 'quarterly report is due' in answer
    assert answer.endswith(
        'Note: ranking by meaning was unavailable for this search (ConnectionError); '
        'the results are ranked by words alone.'
    )
    assert len(answer.encode()) <= 16_000


@needs_numpy
@pytest.mark.parametrize('query', ['', '   ', '\x00\x00', 'ü' * 20_000, '?!', 'car ' * 5000])
async def test_hostile_queries_get_answers(query: str) -> None:
    store = InMemoryStepStore()
    await chat(store, EXCHANGES)
    tool = hybrid(store, max_result_bytes=4096)
    answer = await tool.search(context(), request(query))
    assert isinstance(answer, str) and answer
    assert len(answer.encode()) <= 4096
    assert isinstance(await tool.search(context(None), request(query)), str)
    assert isinstance(await tool.search(context('nobody'), request(query)), str)


class _NoVectors(InMemoryStepStore):
    """A step store keeping no vectors (as a store of your own may)."""

    vector_storage = None  # pyright: ignore[reportAssignmentType]


async def test_update_index_refuses_an_embedder_with_bm25() -> None:
    with pytest.raises(ValueError, match=r"embedder=.* is only used with ranking='hybrid'"):
        await update_index(InMemoryStepStore(), ranking='bm25', embedder=embedder())


@needs_numpy
async def test_index_time_embedding_needs_a_store_that_keeps_vectors() -> None:
    with pytest.raises(ValueError, match=r"update_index with ranking='hybrid' .* _NoVectors has none"):
        await update_index(_NoVectors(), embedder=embedder())
    with pytest.raises(ValueError, match=r"StepPersistence with ranking='hybrid' .* _NoVectors has none"):
        StepPersistence(store=_NoVectors(), embedder=embedder())


@needs_numpy
def test_step_persistence_embeds_only_where_it_indexes() -> None:
    with pytest.raises(ValueError, match="ranking='hybrid' embeds what each save indexes, and index_on_save=False"):
        StepPersistence(store=InMemoryStepStore(), embedder=embedder(), index_on_save=False)
    with pytest.raises(TypeError, match='embedder must be a pydantic_ai.embeddings.Embedder'):
        StepPersistence(store=InMemoryStepStore(), embedder=ConceptEmbeddingModel())  # pyright: ignore[reportArgumentType]
    assert not StepPersistence(store=InMemoryStepStore(), ranking='bm25')._embeds
