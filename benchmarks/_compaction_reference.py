# pyright: basic, reportMissingImports=false
"""The compaction loop on the reference (pydantic-ai-harness 0.62.0 on pydantic-ai-slim 2.62.0), in its own venv.

Run only with the reference venv's Python (`benchmarks._venv.reference_python()`), from the repo
root: `python -m benchmarks._compaction_reference --steps 200 --db PATH`. It imports
`benchmarks._compaction_loop` (the same model, tool and figures as our side) and the harness,
never `durable_recall`, and prints one JSON object: the run's `Figures`, and the versions.

The agent is what the harness's own README pairs for recall: its `StepPersistence` on its
`SqliteStepStore`, its `ConversationSearch(SnapshotHistorySource(store), scope='conversation')`
and its `SlidingWindowCompaction` with the options our side gets.

Checked in basic mode: pyright runs in this repo's venv, where the harness is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from importlib.metadata import version

from pydantic_ai import Agent
from pydantic_ai.usage import UsageLimits
from pydantic_ai_harness.compaction import SlidingWindowCompaction
from pydantic_ai_harness.conversation_search import ConversationSearch, SnapshotHistorySource
from pydantic_ai_harness.step_persistence import SqliteStepStore, StepPersistence

from benchmarks._compaction_loop import TASK, LoopModel, command_tool


async def _run(steps: int, database: str, max_messages: int, keep_messages: int) -> dict[str, object]:
    store = SqliteStepStore(database=database)
    script = LoopModel(steps=steps)
    agent = Agent(
        script.model(),
        name='compaction-bench',
        tools=[command_tool(steps)],
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            SlidingWindowCompaction(max_messages=max_messages, keep_messages=keep_messages),
        ],
    )
    started, cpu = time.perf_counter(), time.process_time()
    await agent.run(TASK, conversation_id='compaction-bench', usage_limits=UsageLimits(request_limit=None))
    script.meter.figures.wall_s = time.perf_counter() - started
    script.meter.figures.cpu_s = time.process_time() - cpu
    return script.meter.figures.to_json()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--steps', type=int, required=True)
    parser.add_argument('--db', required=True)
    parser.add_argument('--max-messages', type=int, default=40)
    parser.add_argument('--keep-messages', type=int, default=20)
    args = parser.parse_args(argv)
    figures = asyncio.run(_run(args.steps, args.db, args.max_messages, args.keep_messages))
    out = {'figures': figures, 'harness': version('pydantic-ai-harness'), 'slim': version('pydantic-ai-slim')}
    sys.stdout.write(json.dumps(out) + '\n')


if __name__ == '__main__':
    main()
