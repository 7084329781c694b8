"""Fixtures shared by the persistence tests: pretend to be workflow code, and watch the durable writes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic_ai.tools import RunContext

from durable_recall import StepPersistence
from durable_recall.stores import PersistBatch


@pytest.fixture
def in_workflow(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The run context says it is workflow code (as a durability capability would), so `StepPersistence` batches."""
    monkeypatch.setattr(RunContext, 'in_durable_context', property(lambda self: True))
    yield


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[PersistBatch]:
    """Every batch `save_steps` writes, in order."""
    seen: list[PersistBatch] = []
    original = StepPersistence.save_steps

    async def spy(self: StepPersistence, ctx: Any, batch: PersistBatch) -> int:
        seen.append(batch)
        return await original(self, ctx, batch)

    monkeypatch.setattr(StepPersistence, 'save_steps', spy)
    return seen
