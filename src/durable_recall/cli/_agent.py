"""The demo agent: the recall stack (persistence, search, compaction) on one store, on any engine."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model

from ..compaction import SlidingWindowCompaction
from ..persistence import StepPersistence
from ..search import ConversationSearch, SnapshotHistorySource
from ..stores import StepStore
from ._script import AGENT_NAME, INSTRUCTIONS, WINDOW, check_export_job

__all__ = ('build_agent',)


def build_agent(model: Model | str, store: StepStore, durability: AbstractCapability[Any] | None) -> Agent[None, str]:
    """`StepPersistence` + `ConversationSearch` + `SlidingWindowCompaction` on `store`: the whole recall stack.

    Args:
        model: The scripted model, or a `provider:model` name for a real one.
        store: Where every step is persisted and what the search reads.
        durability: `TemporalDurability()`, `DBOSDurability()`, or `None` to run in process.
    """
    capabilities: list[AbstractCapability[Any]] = [
        StepPersistence(store=store),
        ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
        # A support chat, not a task: its opening message is not what every later turn needs, so the
        # window may drop it (and the agent recalls it by search, which is what the demo shows).
        SlidingWindowCompaction(max_messages=WINDOW, preserve_first_user_message=False),
    ]
    if durability is not None:
        capabilities.append(durability)
    return Agent(
        model,
        name=AGENT_NAME,
        instructions=INSTRUCTIONS,
        tools=[check_export_job],
        capabilities=capabilities,
    )
