from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai.embeddings import EmbeddingModel

from durable_recall import SqliteStepStore

from ..hybrid._kit import ConceptEmbeddingModel
from ._support import Populated, populate_sync


@pytest.fixture(autouse=True)
def no_store_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's default store comes from DURABLE_RECALL_STORE: tests say which store they mean."""
    monkeypatch.delenv('DURABLE_RECALL_STORE', raising=False)


@pytest.fixture(scope='module')
def populated(tmp_path_factory: pytest.TempPathFactory) -> Populated:
    """A SQLite store that real agents populated (see `populate`); the tests only read it."""
    path = tmp_path_factory.mktemp('cli') / 'sessions.db'
    return replace(populate_sync(SqliteStepStore(path)), store=str(path))


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> dict[str, ConceptEmbeddingModel]:
    """The models `--embedder test:NAME` resolves to, by name (the latest made): `test:down` fails every call.

    pydantic-ai's model inference is patched, so the command line makes its `Embedder` from the
    name exactly as with a real provider; each `Embedder` gets a model of its own, whose calls the
    test counts.
    """
    made: dict[str, ConceptEmbeddingModel] = {}

    def infer(name: str | EmbeddingModel, **options: Any) -> EmbeddingModel:
        if isinstance(name, EmbeddingModel):  # the model the `Embedder` resolved at construction
            return name
        provider, _, model = name.partition(':')
        if provider != 'test':
            raise ValueError(f'Unknown provider: {provider}')
        made[model] = ConceptEmbeddingModel(model, fail=model == 'down')
        return made[model]

    monkeypatch.setattr('pydantic_ai.embeddings.infer_embedding_model', infer)
    return made
