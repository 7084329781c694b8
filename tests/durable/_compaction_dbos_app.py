"""The process `test_compaction_dbos.py` crashes and recovers: one compacted 100-step tool loop under DBOS.

Run as `python -m tests.durable._compaction_dbos_app <mode> --system-db URL --store PATH --views PATH
--workflow-id ID --conversation ID ...` from the repository root. Modes:

- `crash`: start the loop's workflow; when the model is handed the return of step `--crash-at`,
  the process ends with `os._exit(--crash-exit-code)` before answering: no cleanup, no DBOS
  shutdown, like a killed worker. The store then holds only the snapshots written before (the
  workflow queues them and writes every 16 steps), and DBOS the steps recorded so far.
- `recover`: launch DBOS on the same system database, which recovers the pending workflow; wait
  for its result; then run the same loop uncrashed under `--clean-workflow-id` and
  `--clean-conversation`, the reference; write both outputs to `--out` as JSON.

Every model call appends the view it was handed to `--views`, with its workflow id, flushed to
disk before it answers, so the views survive `os._exit`. The model's reply depends only on the
messages (`tests.durable._compaction_loop`), as recovery needs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from pathlib import Path

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
)
from tests.compaction._loop import TASK, step

from ._compaction_dbos_views import append_view
from ._compaction_loop import loop_reply

APP_NAME = 'durable_recall_compaction_crash_tests'
AGENT_NAME = 'compaction_crash_loop'


def newest_step(messages: list[ModelMessage]) -> int:
    """The newest `call-<n>` in the view: the steps done so far (the window always keeps the newest cycle)."""
    return max(
        (
            int(match.group(1))
            for message in messages
            for part in message.parts
            if isinstance(part, ToolCallPart) and (match := re.fullmatch(r'call-(\d+)', part.tool_call_id))
        ),
        default=0,
    )


class RecordingModel:
    """The loop's replies, each view logged first; with `crash_at`, dies when handed that step's return."""

    def __init__(self, views: Path, crash_at: int | None, exit_code: int) -> None:
        self._views = views
        self._crash_at = crash_at
        self._exit_code = exit_code

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        workflow_id = DBOS.workflow_id
        assert workflow_id is not None, 'the model request runs as a DBOS step of the loop workflow'
        if self._crash_at is not None and newest_step(messages) == self._crash_at:
            # This request is not recorded yet: recovery hands the model the same view again.
            os._exit(self._exit_code)
        append_view(self._views, workflow_id, messages)
        return loop_reply(messages, info)


_agent: Agent[None, str] | None = None


def build_agent(store_path: Path, views: Path, crash_at: int | None, exit_code: int) -> Agent[None, str]:
    """The README's capabilities with the issue's window, over the SQLite store, under `DBOSDurability()`."""
    store = SqliteStepStore(database=store_path)
    agent = Agent(
        FunctionModel(RecordingModel(views, crash_at, exit_code), model_name='durable-loop'),
        name=AGENT_NAME,
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(SnapshotHistorySource(store), scope='conversation'),
            SlidingWindowCompaction(max_messages=40, keep_messages=20),
            DBOSDurability(),
        ],
    )
    agent.tool_plain(step)
    return agent


@DBOS.workflow(name='durable_recall_tests.compacted_loop')
async def compacted_loop(conversation_id: str) -> str:
    assert _agent is not None
    result = await _agent.run(TASK, conversation_id=conversation_id, usage_limits=UsageLimits(request_limit=None))
    return result.output


def launch(system_db: str) -> None:
    DBOS(
        config={
            'name': APP_NAME,
            'system_database_url': system_db,
            'enable_otlp': False,
            'log_level': 'WARNING',
            'notification_listener_polling_interval_sec': 0.01,
        }
    )
    DBOS.launch()


async def run(args: argparse.Namespace) -> None:
    # Launched from the event loop the workflows run on, as a service would.
    launch(args.system_db)
    try:
        if args.mode == 'crash':
            with SetWorkflowID(args.workflow_id):
                await compacted_loop(args.conversation)
            raise AssertionError(f'the loop finished: the model was never handed step {args.crash_at} return')
        # `DBOS.launch()` has already re-enqueued the pending workflow; wait for it to finish.
        handle = await DBOS.retrieve_workflow_async(args.workflow_id)
        recovered: str = await handle.get_result()
        with SetWorkflowID(args.clean_workflow_id):
            clean = await compacted_loop(args.clean_conversation)
        args.out.write_text(json.dumps({'recovered': recovered, 'clean': clean}))
    finally:
        DBOS.destroy()


def main() -> None:
    global _agent
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('mode', choices=['crash', 'recover'])
    parser.add_argument('--system-db', required=True)
    parser.add_argument('--store', type=Path, required=True)
    parser.add_argument('--views', type=Path, required=True)
    parser.add_argument('--workflow-id', required=True)
    parser.add_argument('--conversation', required=True)
    parser.add_argument('--crash-at', type=int, required=True)
    parser.add_argument('--crash-exit-code', type=int, default=17)
    parser.add_argument('--clean-workflow-id')
    parser.add_argument('--clean-conversation')
    parser.add_argument('--out', type=Path)
    args = parser.parse_args()

    # DBOS registers the agent's steps while it is built, so build it before launching.
    crash_at = args.crash_at if args.mode == 'crash' else None
    _agent = build_agent(args.store, args.views, crash_at, args.crash_exit_code)
    asyncio.run(run(args))
    # Skip interpreter finalization: DBOS's and SQLAlchemy's threads can make it slow; all output is written.
    os._exit(0)


if __name__ == '__main__':
    main()
