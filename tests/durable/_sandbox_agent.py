"""An agent in a module of its own, which `DurableRecallPlugin(passthrough_modules=[...])` can pass through.

Passed through, the module is imported once, by the worker process, and workflow code uses that
very agent instead of a copy the sandbox builds for every workflow run.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability

from durable_recall import ConversationSearch, InMemoryStepStore, SnapshotHistorySource, StepPersistence

from ._recall_script import recall_model

shared_store = InMemoryStepStore()
shared_agent = Agent(
    recall_model(),
    name='sandbox_shared',
    capabilities=[
        StepPersistence(store=shared_store),
        ConversationSearch(SnapshotHistorySource(shared_store), scope='conversation'),
        TemporalDurability(),
    ],
)
