"""Hybrid search under `TemporalDurability()`: messages and query are embedded in the search activity only."""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import closing

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.embeddings import Embedder
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment

from durable_recall import ConversationSearch, SlidingWindowCompaction, SnapshotHistorySource, StepPersistence

from .._services.temporal import activity_names, replay, run_workflow
from ..hybrid._kit import ConceptEmbeddingModel, needs_numpy
from ._persistence import STORE_DIR, sqlite_store
from ._recall_script import DETAIL, converse, quoted_search, recall_model

pytestmark = [pytest.mark.anyio, needs_numpy]

STORE = sqlite_store('search-temporal-hybrid')
MODEL = ConceptEmbeddingModel('concepts-temporal')

HYBRID = Agent(
    recall_model(),
    name='recall_hybrid',
    capabilities=[
        StepPersistence(store=STORE),
        ConversationSearch(
            SnapshotHistorySource(STORE), scope='conversation', ranking='hybrid', embedder=Embedder(MODEL)
        ),
        SlidingWindowCompaction(max_messages=6),
        TemporalDurability(),
    ],
)


@workflow.defn(name='durable_recall_tests.RecallHybrid')
class RecallHybrid(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [HYBRID]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(HYBRID, conversation_id)


async def test_hybrid_search_embeds_in_its_activity_and_replays(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'conv-{uuid.uuid4()}'
    done = await run_workflow(
        temporal_env, RecallHybrid.run, conversation_id, workflows=[RecallHybrid], max_cached_workflows=0
    )
    assert DETAIL in quoted_search(done.result)
    names = activity_names(done.history)
    assert names.count('agent__recall_hybrid__toolset__conversation-search__call_tool') == 1
    assert MODEL.queries == ['ledger export ZEBRA']  # once, in the activity, though the workflow replayed
    embedded = len(MODEL.documents)
    assert embedded > 0
    with closing(sqlite3.connect(STORE_DIR / 'search-temporal-hybrid.db')) as conn:
        (rows,) = conn.execute(
            "SELECT COUNT(*) FROM dr_vectors WHERE model = 'test:concepts-temporal:6'"
            ' AND run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
            (conversation_id,),
        ).fetchone()
    assert rows == 6  # runs 1 to 6: run 7 is written at its end, after its search
    assert (await replay(done.history, workflows=[RecallHybrid])).replay_failure is None
    assert len(MODEL.documents) == embedded and MODEL.queries == ['ledger export ZEBRA']


SAVED_STORE = sqlite_store('search-temporal-hybrid-saved')
SAVING = ConceptEmbeddingModel('concepts-saved')
SEARCHING = ConceptEmbeddingModel('concepts-saved')
"""The same model on both sides, as two processes' embedders of it: the search reads what the saves stored."""

EMBEDDING_SAVES = Agent(
    recall_model(),
    name='recall_hybrid_saved',
    capabilities=[
        StepPersistence(store=SAVED_STORE, embedder=Embedder(SAVING)),
        ConversationSearch(
            SnapshotHistorySource(SAVED_STORE), scope='conversation', ranking='hybrid', embedder=Embedder(SEARCHING)
        ),
        SlidingWindowCompaction(max_messages=6),
        TemporalDurability(),
    ],
)


@workflow.defn(name='durable_recall_tests.RecallHybridSaved')
class RecallHybridSaved(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [EMBEDDING_SAVES]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(EMBEDDING_SAVES, conversation_id)


async def test_saves_embed_in_their_activity_so_the_search_embeds_only_its_query(
    temporal_env: WorkflowEnvironment,
) -> None:
    conversation_id = f'conv-{uuid.uuid4()}'
    done = await run_workflow(
        temporal_env, RecallHybridSaved.run, conversation_id, workflows=[RecallHybridSaved], max_cached_workflows=0
    )
    assert DETAIL in quoted_search(done.result)
    embedded = len(SAVING.documents)
    assert embedded > 0 and SAVING.queries == ['durable-recall']  # the model's name, learnt once
    assert SEARCHING.documents == [] and SEARCHING.queries == ['ledger export ZEBRA']
    with closing(sqlite3.connect(STORE_DIR / 'search-temporal-hybrid-saved.db')) as conn:
        (rows,) = conn.execute(
            "SELECT COUNT(*) FROM dr_vectors WHERE model = 'test:concepts-saved:6'"
            ' AND run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
            (conversation_id,),
        ).fetchone()
    assert rows == 7
    # A replay runs no activity: nothing is saved, indexed or embedded again.
    assert (await replay(done.history, workflows=[RecallHybridSaved])).replay_failure is None
    assert len(SAVING.documents) == embedded and SAVING.queries == ['durable-recall']
    assert SEARCHING.documents == [] and SEARCHING.queries == ['ledger export ZEBRA']
