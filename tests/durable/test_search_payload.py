"""The search's byte budget under Temporal: a huge result crosses the activity boundary clipped, far below 2 MB.

The conversation holds far more matching text than one answer may carry: 60 long notes that all
mention ZEBRA arrive through `message_history` (persisted by the run's first snapshot), then the
model searches for ZEBRA with room for 50 matches. Without the budget that answer would be over
100 KB; with the default `max_result_bytes=16000` the search activity's result
payload stays within a few hundred bytes of 16,000, and no payload in the workflow's history comes
near Temporal's 2 MB limit.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from durable_recall import ConversationSearch, SlidingWindowCompaction, SnapshotHistorySource, StepPersistence
from durable_recall.search import SearchRequest

from .._services.temporal import run_workflow
from ._persistence import sqlite_store
from ._recall_script import quoted_search, recall_model

pytestmark = pytest.mark.anyio

BUDGET = 16_000
TEMPORAL_PAYLOAD_LIMIT = 2 * 1024 * 1024
SEARCH_ACTIVITY = 'agent__recall_payload__toolset__conversation-search__call_tool'
NOTES = 60

STORE = sqlite_store('search-payload')
AGENT = Agent(
    recall_model(),
    name='recall_payload',
    capabilities=[
        StepPersistence(store=STORE),
        ConversationSearch(SnapshotHistorySource(STORE), scope='conversation', max_matches=50),
        SlidingWindowCompaction(max_messages=6),
        TemporalDurability(),
    ],
)


def long_notes(count: int) -> list[ModelMessage]:
    """`count` exchanges whose every message mentions ZEBRA at length (fixed timestamps: replay-safe)."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    history: list[ModelMessage] = []
    for i in range(count):
        history.append(ModelRequest(parts=[UserPromptPart(f'note {i} about ZEBRA: ' + 'stripes ' * 150, timestamp=at)]))
        history.append(ModelResponse(parts=[TextPart(f'noted {i}, ZEBRA ' + 'savanna ' * 150)], timestamp=at))
    return history


@workflow.defn(name='durable_recall_tests.RecallPayload')
class RecallPayload(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, conversation_id: str) -> str:
        result = await AGENT.run('recall: ZEBRA', message_history=long_notes(NOTES), conversation_id=conversation_id)
        return result.output


def payload_sizes(history: WorkflowHistory) -> dict[str, list[int]]:
    """Bytes of every activity input and result in `history`, keyed by activity type."""
    types: dict[int, str] = {}
    sizes: dict[str, list[int]] = {}
    for event in history.events:
        if event.HasField('activity_task_scheduled_event_attributes'):
            attributes = event.activity_task_scheduled_event_attributes
            types[event.event_id] = attributes.activity_type.name
            sizes.setdefault(attributes.activity_type.name, []).append(
                sum(p.ByteSize() for p in attributes.input.payloads)
            )
        elif event.HasField('activity_task_completed_event_attributes'):
            attributes = event.activity_task_completed_event_attributes
            size = sum(p.ByteSize() for p in attributes.result.payloads)
            sizes[types[attributes.scheduled_event_id]].append(size)
    return sizes


async def test_a_huge_result_stays_within_the_budget(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'conv-{uuid.uuid4()}'
    run = await run_workflow(temporal_env, RecallPayload.run, conversation_id, workflows=[RecallPayload])

    answer = quoted_search([run.result])
    assert answer.count('ZEBRA') >= 10, 'the answer carries real matches'
    # The matches come first, each with its partner, while they take at most 70% of the budget; the
    # rest is their context, and the matches left out are counted.
    shown = int(answer.split(' ', 1)[0])
    assert 10 <= shown < 20 and f'{20 - shown} more matches were left out' in answer
    assert len(answer.encode()) <= BUDGET

    # What the same search would return with no budget: the budget is what keeps the payload small.
    unbounded = ConversationSearch(
        SnapshotHistorySource(STORE), scope='conversation', max_matches=100, max_result_bytes=10**9
    )
    everything = await unbounded._engine.search(
        SearchRequest(query='ZEBRA'), scope='conversation', conversation_id=conversation_id
    )
    assert len(everything.encode()) > 4 * BUDGET  # overlapping windows merge, so each message shows once

    sizes = payload_sizes(run.history)
    search_input, search_result = sizes[SEARCH_ACTIVITY]
    assert search_input < 8192, 'the query and the run context, nothing that grows with the history'
    assert BUDGET // 2 < search_result < BUDGET + 2048, 'one result, clipped to the budget plus its envelope'
    largest = max(size for per_activity in sizes.values() for size in per_activity)
    assert largest < TEMPORAL_PAYLOAD_LIMIT // 4, f'an activity payload of {largest} bytes is too close to 2 MB'
