# pyright: basic, reportMissingImports=false
"""Drive the reference (pydantic-ai-harness 0.62.0 on pydantic-ai-slim 2.62.0) in its own venv.

Run only with the reference venv's Python (`benchmarks._venv.reference_python()`), from the repo
root: `python -m benchmarks._reference ingest|search ...`. It imports `benchmarks._script` (plain
data plus `pydantic_ai`) and the harness, never `durable_recall`, and prints one JSON object.

`ingest` replays conversation scripts through a real `Agent` with the harness's `StepPersistence`
on its `SqliteStepStore` and its `SlidingWindowCompaction(max_messages=40)`, the pairing its README
recommends. Ingest time is the time spent inside the store's write methods (run registration,
events, tool-effect records, snapshots; the store serializes the history inside `save_snapshot`).

`search` times `ConversationSearchToolset.search_conversation_history` under scope
`'conversation'`: the first call in a fresh process (imports excluded, reported apart), then
warm repeats in the same process. The reference caches nothing, so warm and cold cost the same.

This file is checked in basic mode: pyright runs in this repo's venv, where the harness is not
installed.
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402
from pydantic_ai.usage import RunUsage, UsageLimits  # noqa: E402
from pydantic_ai_harness.compaction import SlidingWindowCompaction  # noqa: E402
from pydantic_ai_harness.conversation_search import SnapshotHistorySource  # noqa: E402
from pydantic_ai_harness.conversation_search._toolset import ConversationSearchToolset  # noqa: E402
from pydantic_ai_harness.step_persistence import SqliteStepStore, StepPersistence  # noqa: E402

from benchmarks._rss import peak_rss_kb  # noqa: E402
from benchmarks._script import conversation_from_json, scripted_agent_parts  # noqa: E402

_IMPORTED = time.perf_counter()
WINDOW = 40


class _TimedStore(SqliteStepStore):
    """The harness store, with the time spent in its write methods added up."""

    write_seconds = 0.0

    async def register_run(self, record: Any) -> None:
        started = time.perf_counter()
        try:
            await super().register_run(record)
        finally:
            _TimedStore.write_seconds += time.perf_counter() - started

    async def append_event(self, event: Any) -> None:
        started = time.perf_counter()
        try:
            await super().append_event(event)
        finally:
            _TimedStore.write_seconds += time.perf_counter() - started

    async def save_snapshot(self, snapshot: Any) -> None:
        started = time.perf_counter()
        try:
            await super().save_snapshot(snapshot)
        finally:
            _TimedStore.write_seconds += time.perf_counter() - started

    async def record_tool_effect(self, record: Any) -> None:
        started = time.perf_counter()
        try:
            await super().record_tool_effect(record)
        finally:
            _TimedStore.write_seconds += time.perf_counter() - started


async def _ingest(database: str, scripts: list[str]) -> dict[str, Any]:
    store = _TimedStore(database=database)
    messages = 0
    started = time.perf_counter()
    for script in scripts:
        conversation = conversation_from_json(json.loads(Path(script).read_text()))
        model, tools, start = scripted_agent_parts(conversation)
        agent = Agent(
            model,
            name='bench-agent',
            tools=tools,
            capabilities=[StepPersistence(store=store), SlidingWindowCompaction(max_messages=WINDOW)],
        )
        history = None
        for run in conversation.runs:
            start(run)
            result = await agent.run(
                run.prompt,
                message_history=history,
                conversation_id=conversation.conversation_id,
                run_id=run.run_id,
                usage_limits=UsageLimits(request_limit=None),
            )
            history = result.all_messages()
            messages += len(result.new_messages())
    return {
        'messages': messages,
        'write_seconds': _TimedStore.write_seconds,
        'wall_seconds': time.perf_counter() - started,
    }


async def _search(database: str, conversation_id: str, queries: list[str], repeats: int) -> dict[str, Any]:
    # What a worker builds at startup with its agent (the model, the store object, the toolset) is
    # made before the clock: cold is the first search in a fresh process.
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage(), conversation_id=conversation_id)
    store = SqliteStepStore(database=database)
    toolset = ConversationSearchToolset(
        SnapshotHistorySource(store),
        tool_id='conversation-search',
        max_matches=10,
        context_lines=5,
        bm25_k1=1.5,
        bm25_b=0.75,
        scope='conversation',
    )
    started = time.perf_counter()
    answer = await toolset.search_conversation_history(ctx, queries[0])
    first = time.perf_counter() - started
    warm: list[float] = []
    for _ in range(repeats):
        for query in queries:
            began = time.perf_counter()
            await toolset.search_conversation_history(ctx, query)
            warm.append(time.perf_counter() - began)
    return {'first': first, 'warm': warm, 'answer_head': answer.splitlines()[0] if answer else ''}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('mode', choices=('ingest', 'search', 'versions'))
    parser.add_argument('--db')
    parser.add_argument('--script', action='append', default=[])
    parser.add_argument('--conversation')
    parser.add_argument('--queries')
    parser.add_argument('--repeats', type=int, default=0)
    args = parser.parse_args(argv)
    rss_imported = peak_rss_kb()
    if args.mode == 'versions':
        from importlib.metadata import version

        out: dict[str, Any] = {'harness': version('pydantic-ai-harness'), 'slim': version('pydantic-ai-slim')}
    elif args.mode == 'ingest':
        out = asyncio.run(_ingest(args.db, args.script))
    else:
        queries = json.loads(Path(args.queries).read_text())
        out = asyncio.run(_search(args.db, args.conversation, queries, args.repeats))
    out['import_seconds'] = _IMPORTED - _STARTED
    out['rss_imported_kb'] = rss_imported
    out['rss_peak_kb'] = peak_rss_kb()
    sys.stdout.write(json.dumps(out) + '\n')


if __name__ == '__main__':
    main()
