# pyright: basic, reportMissingImports=false
"""The recall benchmark's reference side: run in the reference venv (pydantic-ai-harness 0.62.0).

`python -m benchmarks._recall_reference SCRIPT.json DATABASE` plays the exchanges through a real
`Agent` with the harness's `StepPersistence` on its `SqliteStepStore` and its
`SlidingWindowCompaction(max_messages=20)` (as `benchmarks._recall` plays ours), then sends every
question to its `ConversationSearchToolset` (scope `'conversation'`, 10 matches, 5 context lines)
and prints one JSON object: the answers and the warm latencies. Imports no `durable_recall`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pydantic_ai._agent_graph as agent_graph
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai_harness.compaction import SlidingWindowCompaction
from pydantic_ai_harness.conversation_search import SnapshotHistorySource
from pydantic_ai_harness.conversation_search._toolset import ConversationSearchToolset
from pydantic_ai_harness.step_persistence import SqliteStepStore, StepPersistence


async def _main(script: dict[str, Any], database: str) -> dict[str, Any]:
    exchanges = [(prompt, reply, datetime.fromisoformat(at)) for prompt, reply, at in script['exchanges']]
    replies = iter(exchanges)
    current: list[datetime] = []

    def model(messages: Any, info: Any) -> ModelResponse:
        _, reply, at = next(replies)
        return ModelResponse(parts=[TextPart(reply)], timestamp=at)

    if hasattr(agent_graph, 'now_utc'):
        agent_graph.now_utc = lambda: current[-1]  # pyright: ignore[reportPrivateImportUsage]
    store = SqliteStepStore(database=database)
    agent = Agent(
        FunctionModel(model),
        name='recall-bench',
        capabilities=[StepPersistence(store=store), SlidingWindowCompaction(max_messages=20)],
    )
    cid = script['conversation_id']
    history = None
    for prompt, _, at in exchanges:
        current.append(at)
        result = await agent.run(prompt, message_history=history, conversation_id=cid)
        history = result.all_messages()
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=cid)
    toolset = ConversationSearchToolset(
        SnapshotHistorySource(store),
        tool_id='conversation-search',
        max_matches=10,
        context_lines=5,
        bm25_k1=1.5,
        bm25_b=0.75,
        scope='conversation',
    )
    answers = [await toolset.search_conversation_history(ctx, question) for question in script['questions']]
    latencies: list[float] = []
    for _ in range(min(script['warm_rounds'], 1)):
        for question in script['questions']:
            began = time.perf_counter()
            await toolset.search_conversation_history(ctx, question)
            latencies.append(time.perf_counter() - began)
    return {'answers': answers, 'latencies': latencies}


def main() -> None:
    script = json.loads(Path(sys.argv[1]).read_text())
    sys.stdout.write(json.dumps(asyncio.run(_main(script, sys.argv[2]))) + '\n')


if __name__ == '__main__':
    main()
