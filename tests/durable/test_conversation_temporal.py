"""`TemporalConversationStore`: load -> run -> save in a workflow, with activities that replay and retry safely.

A 7-turn conversation, each turn loading a 4-message window of the stored conversation, running the
agent and saving the result; in turn 7 the agent recalls turn 1's detail from the conversation store.
The second save's first attempt commits and then fails (its answer lost): Temporal retries the
activity, which must recognise its own commit. Run on a worker that replays every workflow task
(`max_cached_workflows=0`), then replayed from the fetched history by `Replayer`, which must touch
nothing; a changed workflow must fail replay.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai.conversation import Conversation
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment

from durable_recall.temporal import TemporalConversationStore

from .._services.temporal import activity_names, make_worker, replay
from ._conversation_loop import FlakyConversationStore, converse, recall_agent, stored
from ._conversation_titles import HAS_UPDATE, LosingTitleStore, check_titles, title_twice
from ._persistence import STORE_DIR
from ._recall_script import DETAIL, TURNS, quoted_search

pytestmark = pytest.mark.anyio

STORE = FlakyConversationStore(STORE_DIR / 'conversations-temporal.db')
CONVERSATIONS = TemporalConversationStore(
    STORE,
    name='support',
    activity_config={
        'start_to_close_timeout': timedelta(seconds=30),
        'retry_policy': RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_attempts=3),
    },
)
AGENT = recall_agent('conversation_temporal', STORE, TemporalDurability())

TITLE_STORE = LosingTitleStore(STORE_DIR / 'conversation-titles-temporal.db')
TITLES = TemporalConversationStore(
    TITLE_STORE,
    name='titles',
    activity_config={
        'start_to_close_timeout': timedelta(seconds=30),
        'retry_policy': RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_attempts=3),
    },
)


@workflow.defn(name='durable_recall_tests.ConversationTitles')
class ConversationTitles:
    """Titles a conversation as an agent would, then as a second agent would (which must not replace it)."""

    @workflow.run
    async def run(self, conversation_id: str) -> list[Any]:
        return await title_twice(TITLES, conversation_id)


@workflow.defn(name='durable_recall_tests.ConversationLoop')
class ConversationLoop(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(CONVERSATIONS, AGENT, conversation_id)


@workflow.defn(name='durable_recall_tests.ConversationLoop')
class ConversationLoopChanged(PydanticAIWorkflow):
    """The negative control: one turn fewer, so the recorded history cannot replay."""

    __pydantic_ai_agents__ = [AGENT]

    @workflow.run
    async def run(self, conversation_id: str) -> list[str]:
        return await converse(CONVERSATIONS, AGENT, conversation_id, TURNS[:-1])


def test_the_activity_names_are_pinned() -> None:
    # Compatibility data: renaming them strands workflows in flight.
    assert [getattr(a, '__temporal_activity_definition').name for a in CONVERSATIONS.activities] == [
        'durable_recall__conversation_store__support__load',
        'durable_recall__conversation_store__support__save',
        'durable_recall__conversation_store__support__update',
    ]
    assert CONVERSATIONS.update_activity_name == 'durable_recall__conversation_store__support__update'
    policy = CONVERSATIONS.activity_config.get('retry_policy')
    assert policy is not None and 'ConversationConflict' in (policy.non_retryable_error_types or [])


async def test_load_run_save_is_durable_retried_and_replayed(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'conv-{uuid.uuid4()}'
    STORE.fail_after_commit.add((conversation_id, 2))
    client = temporal_env.client
    async with make_worker(
        client, workflows=[ConversationLoop], activities=CONVERSATIONS.activities, max_cached_workflows=0
    ) as worker:
        handle = await client.start_workflow(
            ConversationLoop.run,
            conversation_id,
            id=f'conversation-{conversation_id}',
            task_queue=worker.task_queue,
            execution_timeout=timedelta(seconds=120),
        )
        outputs = await handle.result()
    history = await handle.fetch_history()

    assert DETAIL in quoted_search(outputs), 'turn 7 recalls from the store what no loaded window held'
    assert (conversation_id, 2) not in STORE.fail_after_commit, 'the second save lost its answer once'
    assert STORE.writes[conversation_id] == len(TURNS), 'one commit per turn: the retry wrote nothing'
    ids, parts, branches = await stored(STORE, conversation_id)
    assert branches == [] and len(ids) == len(set(ids)) == 2 * len(TURNS) + 2  # the search's call and return
    assert [part for part in parts if part in TURNS] == TURNS

    names = activity_names(history)
    load, save = (f'durable_recall__conversation_store__support__{op}' for op in ('load', 'save'))
    assert names.count(load) == names.count(save) == len(TURNS)
    assert names[0] == load and names[-1] == save
    attempts = [
        event.activity_task_started_event_attributes.attempt
        for event in history.events
        if event.HasField('activity_task_started_event_attributes')
    ]
    assert max(attempts) == 2, 'Temporal retried the save whose answer was lost'

    before = await stored(STORE, conversation_id)
    assert (await replay(history, workflows=[ConversationLoop])).replay_failure is None
    assert await stored(STORE, conversation_id) == before and STORE.writes[conversation_id] == len(TURNS)
    assert (await replay(history, workflows=[ConversationLoopChanged])).replay_failure is not None


def _activity_attempts(history: Any, name: str) -> list[int]:
    scheduled = {
        event.event_id: event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField('activity_task_scheduled_event_attributes')
    }
    return [
        event.activity_task_started_event_attributes.attempt
        for event in history.events
        if event.HasField('activity_task_started_event_attributes')
        and scheduled[event.activity_task_started_event_attributes.scheduled_event_id] == name
    ]


@pytest.mark.skipif(not HAS_UPDATE, reason='ConversationStore.update needs pydantic-ai-slim>=2.78')
async def test_update_is_an_activity_retried_and_replayed(temporal_env: WorkflowEnvironment) -> None:
    conversation_id = f'titled-{uuid.uuid4()}'
    messages: Sequence[Any] = [
        ModelRequest(parts=[UserPromptPart('plan a trip')]),
        ModelResponse(parts=[TextPart('ok')]),
    ]
    await TITLE_STORE.save(Conversation(conversation_id=conversation_id, messages=list(messages)))
    TITLE_STORE.lose_answer.add(conversation_id)  # the first update commits, then its answer is lost
    client = temporal_env.client
    async with make_worker(
        client, workflows=[ConversationTitles], activities=TITLES.activities, max_cached_workflows=0
    ) as worker:
        handle = await client.start_workflow(
            ConversationTitles.run,
            conversation_id,
            id=f'titles-{conversation_id}',
            task_queue=worker.task_queue,
            execution_timeout=timedelta(seconds=60),
        )
        said = await handle.result()
    history = await handle.fetch_history()

    await check_titles(said, conversation_id, TITLE_STORE)

    update = 'durable_recall__conversation_store__titles__update'
    assert activity_names(history) == [update] * 3
    assert _activity_attempts(history, update) == [2, 1, 1], 'Temporal retried the update whose answer was lost'
    assert (await replay(history, workflows=[ConversationTitles])).replay_failure is None
    assert TITLE_STORE.details_writes[conversation_id] == 2, 'the replay touched nothing'
