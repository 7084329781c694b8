"""The issue's acceptance run: one agent run of 200 tool steps, compacted, and the same run's recall.

With `max_messages=40, keep_messages=20` the model never sees more than 41 messages, always sees
the task's prompt, never an orphan tool return; its history's head changes about once per 20 new
messages; and the run's own search brings back, verbatim, what step 1 returned and the window
dropped. `max_tokens`/`keep_tokens` bound the view the same way. The store's record holds every
message the run produced, once.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.usage import UsageLimits

from durable_recall import (
    ConversationSearch,
    InMemoryStepStore,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    StepPersistence,
)
from durable_recall.compaction import has_compaction_marker

from ._loop import DETAIL, TASK, LoopModel, has_task, head_changes, orphan_returns, quoted, step, step_result

pytestmark = pytest.mark.anyio

STEPS = 200


async def run_loop(window: SlidingWindowCompaction) -> tuple[LoopModel, InMemoryStepStore, Any]:
    store = InMemoryStepStore()
    script = LoopModel(steps=STEPS)
    agent = Agent(
        script.model(),
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            window,
        ],
    )
    agent.tool_plain(step)
    result = await agent.run(TASK, conversation_id='audit', usage_limits=UsageLimits(request_limit=None))
    return script, store, result


def check_views(views: list[list[ModelMessage]]) -> None:
    assert all(has_task(view) for view in views)
    assert all(orphan_returns(view) == [] for view in views)


async def test_a_200_step_run_stays_in_a_window_of_40_and_recalls_step_1() -> None:
    script, store, result = await run_loop(SlidingWindowCompaction(max_messages=40, keep_messages=20))
    views = script.views
    assert len(views) == STEPS + 2  # the steps, the search, the quote
    assert max(len(view) for view in views) <= 41
    check_views(views)
    # One cut per ~20 new messages (cache misses), not one per request.
    assert head_changes(views) <= (STEPS * 2) // 20 + 1
    assert any(has_compaction_marker(view[0]) for view in views)
    assert not any(DETAIL in str(view) for view in views[-2:-1]), 'the window dropped step 1 before the search'
    assert step_result(1) in quoted(result.output)

    # The store's record of the run: every message once, in order, nothing the window dropped lost.
    (run,) = await store.list_runs()
    record = await SnapshotHistorySource(store).run_history(run.run_id)
    assert record is not None
    assert len(record.messages) == 1 + 2 * STEPS + 3  # task, calls and returns, search call, its return, quote
    assert len(set(record.hashes)) == len(record.hashes)


async def test_token_triggers_bound_the_view_the_same_way() -> None:
    script, _, result = await run_loop(SlidingWindowCompaction(max_tokens=1_200, keep_tokens=600))
    views = script.views
    sizes = [view[-2].usage.input_tokens for view in views[1:] if len(view) > 1]  # pyright: ignore[reportAttributeAccessIssue]
    assert max(sizes) <= 1_200 + 100  # reported tokens stay near the trigger (one step past it at most)
    check_views(views)
    assert head_changes(views) <= 40
    assert step_result(1) in quoted(result.output)
