"""The search tool under `DBOSDurability()`: a DBOS step, not re-run by recovery, recall across compaction.

Hybrid ranking embeds inside that same step, so a recovered workflow embeds nothing.
"""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import closing
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.embeddings import Embedder

from durable_recall import ConversationSearch, SlidingWindowCompaction, SnapshotHistorySource, StepPersistence
from durable_recall.persistence import _capability as persistence_capability
from durable_recall.persistence._patch import DEFER_WRITE_PATCH
from durable_recall.search import SearchEngine

from .._services.dbos import DBOSSystemDB, dbos_step_names, reexecute_workflow
from ..hybrid._kit import ConceptEmbeddingModel, needs_numpy
from ._persistence import STORE_DIR, row_counts, sqlite_store
from ._recall_script import DETAIL, converse, quoted_search, recall_capabilities, recall_model

pytestmark = pytest.mark.anyio

STORE = sqlite_store('search-dbos')
AGENT = Agent(recall_model(), name='recall_dbos_search', capabilities=[*recall_capabilities(STORE), DBOSDurability()])


@DBOS.workflow(name='durable_recall_tests.dbos_recall')
async def dbos_recall(conversation_id: str) -> list[str]:
    return await converse(AGENT, conversation_id)


async def test_search_is_a_step_that_recovery_does_not_rerun(
    dbos: DBOS, dbos_system_db: DBOSSystemDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    searches: list[str] = []
    original = SearchEngine.search

    async def counting(self: SearchEngine, request: Any, **kwargs: Any) -> str:
        searches.append(request.query)
        return await original(self, request, **kwargs)

    monkeypatch.setattr(SearchEngine, 'search', counting)
    workflow_id = f'recall-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'conv-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        outputs = await dbos_recall(conversation_id)
    answer = quoted_search(outputs)
    assert DETAIL in answer
    assert searches == ['ledger export ZEBRA']

    steps = await dbos_step_names(workflow_id)
    # Compatibility data: the search is one step under this name.
    assert steps.count('recall_dbos_search__capability__conversation_search.search') == 1
    # One write per run: run 7's queue (its prompt and the call) is in the model's view, so the
    # search step has no write in front of it; the patch marker says this workflow may do so.
    assert steps.count('recall_dbos_search__capability__step_persistence.save_steps') == 7
    assert steps.count(f'DBOS.patch-{DEFER_WRITE_PATCH}') == 1
    counts = await row_counts(STORE, conversation_id)

    again = await reexecute_workflow(workflow_id)
    assert isinstance(again, list)
    assert quoted_search(again) == answer
    assert searches == ['ledger export ZEBRA'], 'recovery must return the recorded search, not search again'
    assert await row_counts(STORE, conversation_id) == counts
    assert await dbos_step_names(workflow_id) == steps


HYBRID_STORE = sqlite_store('search-dbos-hybrid')
HYBRID_MODEL = ConceptEmbeddingModel('concepts-dbos')
HYBRID = Agent(
    recall_model(),
    name='recall_dbos_hybrid',
    capabilities=[
        StepPersistence(store=HYBRID_STORE),
        ConversationSearch(
            SnapshotHistorySource(HYBRID_STORE),
            scope='conversation',
            ranking='hybrid',
            embedder=Embedder(HYBRID_MODEL),
        ),
        SlidingWindowCompaction(max_messages=6),
        DBOSDurability(),
    ],
)


@DBOS.workflow(name='durable_recall_tests.dbos_recall_hybrid')
async def dbos_recall_hybrid(conversation_id: str) -> list[str]:
    return await converse(HYBRID, conversation_id)


@needs_numpy
async def test_hybrid_search_embeds_in_its_step_and_recovery_embeds_nothing(
    dbos: DBOS, dbos_system_db: DBOSSystemDB
) -> None:
    HYBRID_MODEL.documents.clear()
    HYBRID_MODEL.queries.clear()
    workflow_id = f'recall-hybrid-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'conv-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        outputs = await dbos_recall_hybrid(conversation_id)
    answer = quoted_search(outputs)
    assert DETAIL in answer
    assert HYBRID_MODEL.queries == ['ledger export ZEBRA']  # embedded once, inside the search step
    embedded = len(HYBRID_MODEL.documents)
    assert embedded > 0
    steps = await dbos_step_names(workflow_id)
    # Compatibility data: the hybrid search is the same one step as BM25's, embedding included.
    assert steps.count('recall_dbos_hybrid__capability__conversation_search.search') == 1
    with closing(sqlite3.connect(STORE_DIR / 'search-dbos-hybrid.db')) as conn:
        (rows,) = conn.execute(
            "SELECT COUNT(*) FROM dr_vectors WHERE model = 'test:concepts-dbos:6'"
            ' AND run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
            (conversation_id,),
        ).fetchone()
    assert rows == 6  # runs 1 to 6: run 7 is written at its end, after its search
    counts = await row_counts(HYBRID_STORE, conversation_id)

    again = await reexecute_workflow(workflow_id)
    assert isinstance(again, list)
    assert quoted_search(again) == answer
    assert HYBRID_MODEL.queries == ['ledger export ZEBRA'], 'recovery must reuse the recorded step, not embed again'
    assert len(HYBRID_MODEL.documents) == embedded
    assert await row_counts(HYBRID_STORE, conversation_id) == counts
    assert await dbos_step_names(workflow_id) == steps


SAVED_STORE = sqlite_store('search-dbos-hybrid-saved')
SAVING = ConceptEmbeddingModel('concepts-dbos-saved')
SEARCHING = ConceptEmbeddingModel('concepts-dbos-saved')
"""The same model on both sides, as two processes' embedders of it: the search reads what the saves stored."""

EMBEDDING_SAVES = Agent(
    recall_model(),
    name='recall_dbos_hybrid_saved',
    capabilities=[
        StepPersistence(store=SAVED_STORE, embedder=Embedder(SAVING)),
        ConversationSearch(
            SnapshotHistorySource(SAVED_STORE), scope='conversation', ranking='hybrid', embedder=Embedder(SEARCHING)
        ),
        SlidingWindowCompaction(max_messages=6),
        DBOSDurability(),
    ],
)


@DBOS.workflow(name='durable_recall_tests.dbos_recall_hybrid_saved')
async def dbos_recall_hybrid_saved(conversation_id: str) -> list[str]:
    return await converse(EMBEDDING_SAVES, conversation_id)


@needs_numpy
async def test_saves_embed_in_their_step_and_recovery_embeds_nothing(dbos: DBOS, dbos_system_db: DBOSSystemDB) -> None:
    for model in (SAVING, SEARCHING):
        model.documents.clear()
        model.queries.clear()
    workflow_id = f'recall-hybrid-saved-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'conv-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        outputs = await dbos_recall_hybrid_saved(conversation_id)
    answer = quoted_search(outputs)
    assert DETAIL in answer
    embedded = len(SAVING.documents)
    assert embedded > 0 and set(SAVING.queries) <= {'durable-recall'}  # the model's name, learnt once a process
    assert SEARCHING.documents == [] and SEARCHING.queries == ['ledger export ZEBRA']
    with closing(sqlite3.connect(STORE_DIR / 'search-dbos-hybrid-saved.db')) as conn:
        (rows,) = conn.execute(
            "SELECT COUNT(*) FROM dr_vectors WHERE model = 'test:concepts-dbos-saved:6'"
            ' AND run_id IN (SELECT run_id FROM dr_runs WHERE conversation_id = ?)',
            (conversation_id,),
        ).fetchone()
    assert rows == 7
    steps = await dbos_step_names(workflow_id)

    again = await reexecute_workflow(workflow_id)
    assert isinstance(again, list) and quoted_search(again) == answer
    assert len(SAVING.documents) == embedded, 'recovery must reuse the recorded save steps, not embed again'
    assert SEARCHING.documents == [] and SEARCHING.queries == ['ledger export ZEBRA']
    assert await dbos_step_names(workflow_id) == steps


async def test_a_workflow_that_wrote_before_the_search_recovers(
    dbos: DBOS, dbos_system_db: DBOSSystemDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workflow recorded by a release that wrote the queue before every search recovers on this one."""

    async def older_release() -> bool:
        return False  # no marker, and the queue is written first, as before the deferred write

    monkeypatch.setattr(persistence_capability, 'deferral_allowed', older_release)
    workflow_id = f'recall-older-{dbos_system_db.kind}-{uuid.uuid4()}'
    conversation_id = f'conv-{uuid.uuid4()}'
    with SetWorkflowID(workflow_id):
        outputs = await dbos_recall(conversation_id)
    steps = await dbos_step_names(workflow_id)
    assert steps.count('recall_dbos_search__capability__step_persistence.save_steps') == 8
    assert f'DBOS.patch-{DEFER_WRITE_PATCH}' not in steps
    monkeypatch.undo()

    again = await reexecute_workflow(workflow_id)
    assert again == outputs
    assert await dbos_step_names(workflow_id) == steps
