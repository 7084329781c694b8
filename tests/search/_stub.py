"""A history source from literal records, and builders for the messages in them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import RunContext
from pydantic_ai.usage import RunUsage

from durable_recall.errors import CorruptSnapshotError
from durable_recall.history import RunHistory
from durable_recall.search import SearchRequest
from durable_recall.stores import RunRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def user(text: str, at: datetime = T0) -> ModelRequest:
    return ModelRequest(parts=[UserPromptPart(content=text, timestamp=at)], timestamp=at)


def reply(text: str, at: datetime = T0) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)], timestamp=at)


def _hash(message: ModelMessage) -> str:
    return hashlib.sha256(repr(message.parts).encode()).hexdigest()


@dataclass
class StubSource:
    """Runs with fixed records; counts calls; can be told a run is corrupt."""

    runs: list[tuple[RunRecord, list[ModelMessage]]] = field(default_factory=list[tuple[RunRecord, list[ModelMessage]]])
    corrupt: set[str] = field(default_factory=set[str])
    list_calls: list[str | None] = field(default_factory=list[str | None])
    versions: dict[str, int] = field(default_factory=dict[str, int])

    def add(
        self,
        run_id: str,
        messages: Sequence[ModelMessage],
        *,
        conversation_id: str | None = 'c1',
        token: str | None = None,
    ) -> None:
        record = RunRecord(
            run_id=run_id,
            conversation_id=conversation_id,
            started_at=T0 + timedelta(seconds=len(self.runs)),
            token=token or run_id,
        )
        self.runs.append((record, list(messages)))

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        self.list_calls.append(conversation_id)
        return [run for run, _ in self.runs if conversation_id is None or run.conversation_id == conversation_id]

    async def run_history(self, run_id: str) -> RunHistory | None:
        if run_id in self.corrupt:
            raise CorruptSnapshotError(run_id, 3, 'log ranges are not JSON')
        for run, messages in self.runs:
            if run.run_id == run_id:
                return RunHistory(
                    run=run,
                    messages=messages,
                    hashes=[_hash(m) for m in messages],
                    version=self.versions.get(run_id, 0),
                )
        return None


def context(conversation_id: str | None = 'c1') -> RunContext[None]:
    model: Model = TestModel()
    return RunContext(deps=None, model=model, usage=RunUsage(), conversation_id=conversation_id)


def request(query: str, **kwargs: Any) -> SearchRequest:
    return SearchRequest(query=query, **kwargs)
