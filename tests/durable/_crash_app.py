"""The process that `test_crash_recovery.py` crashes and recovers: the 7-run recall conversation under DBOS.

Run as `python -m tests.durable._crash_app <mode> --system-db URL --store PATH --log PATH ...` from
the repository root. Modes:

- `crash`: start the conversation workflow under `--workflow-id`; in run 7, the model call right
  after the search step writes the search answer it was handed to `--answer` and ends the process
  with `os._exit(--crash-exit-code)`: no cleanup, no DBOS shutdown, like a killed worker.
- `recover`: launch DBOS on the same system database, which recovers the pending workflow (DBOS
  recovers the local executor's pending workflows on launch); wait for its result; then run the
  same conversation again, uncrashed, under `--clean-workflow-id` as the reference; write both
  results to `--out` as JSON.

Every execution of the search body appends the conversation id to `--log` (through a history
source that counts its `list_runs` calls, which each search makes exactly once), flushed to disk
before returning, so a count survives `os._exit`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import (
    ConversationSearch,
    SlidingWindowCompaction,
    SnapshotHistorySource,
    SqliteStepStore,
    StepPersistence,
)
from durable_recall.history import RunHistory
from durable_recall.stores import RunRecord

from ._recall_script import TURNS, recall_reply

APP_NAME = 'durable_recall_crash_tests'
AGENT_NAME = 'crash_recall'


class CountingSource:
    """A `SnapshotHistorySource` that logs each search's scope listing to a file, durably."""

    def __init__(self, inner: SnapshotHistorySource, log: Path) -> None:
        self._inner = inner
        self._log = log

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        with self._log.open('a') as file:
            file.write(f'{conversation_id}\n')
            file.flush()
            os.fsync(file.fileno())
        return await self._inner.list_runs(conversation_id=conversation_id)

    async def run_history(self, run_id: str) -> RunHistory | None:
        return await self._inner.run_history(run_id)


class CrashingModel:
    """The recall script's replies; in `crash` mode, dies in the first model call after a search."""

    def __init__(self, answer_file: Path | None, exit_code: int) -> None:
        self._answer_file = answer_file
        self._exit_code = exit_code

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if self._answer_file is not None and isinstance(last, ModelRequest):
            returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
            if returns:
                # The search step has completed and DBOS recorded its output; this is the next step.
                self._answer_file.write_text(str(returns[0].content))
                os._exit(self._exit_code)
        return recall_reply(messages, info)


_agent: Agent[None, str] | None = None


def build_agent(store_path: Path, log: Path, answer_file: Path | None, exit_code: int) -> Agent[None, str]:
    """The SPEC example's capabilities over the shared SQLite store, under `DBOSDurability()`."""
    store = SqliteStepStore(database=store_path)
    return Agent(
        FunctionModel(CrashingModel(answer_file, exit_code), model_name='recall-script'),
        name=AGENT_NAME,
        capabilities=[
            StepPersistence(store=store),
            ConversationSearch(CountingSource(SnapshotHistorySource(store), log), scope='conversation'),
            SlidingWindowCompaction(max_messages=6),
            DBOSDurability(),
        ],
    )


@DBOS.workflow(name='durable_recall_tests.crash_conversation')
async def crash_conversation(conversation_id: str) -> list[str]:
    assert _agent is not None
    history: list[ModelMessage] | None = None
    outputs: list[str] = []
    for prompt in TURNS:
        result = await _agent.run(prompt, message_history=history, conversation_id=conversation_id)
        history = result.all_messages()
        outputs.append(result.output)
    return outputs


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


async def crash(args: argparse.Namespace) -> None:
    with SetWorkflowID(args.workflow_id):
        await crash_conversation(args.conversation)
    raise AssertionError('the conversation finished: the model never saw the search result')


async def recover(args: argparse.Namespace) -> dict[str, Any]:
    # `DBOS.launch()` has already re-enqueued the pending workflow; wait for it to finish.
    handle = await DBOS.retrieve_workflow_async(args.workflow_id)
    recovered: list[str] = await handle.get_result()
    with SetWorkflowID(args.clean_workflow_id):
        clean = await crash_conversation(args.clean_conversation)
    return {'recovered': recovered, 'clean': clean}


async def run(args: argparse.Namespace) -> None:
    # Launched from the event loop the workflows run on, as a service would.
    launch(args.system_db)
    try:
        if args.mode == 'crash':
            await crash(args)
        else:
            args.out.write_text(json.dumps(await recover(args)))
    finally:
        DBOS.destroy()


def main() -> None:
    global _agent
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('mode', choices=['crash', 'recover'])
    parser.add_argument('--system-db', required=True)
    parser.add_argument('--store', type=Path, required=True)
    parser.add_argument('--log', type=Path, required=True)
    parser.add_argument('--answer', type=Path, required=True)
    parser.add_argument('--workflow-id', required=True)
    parser.add_argument('--conversation', required=True)
    parser.add_argument('--clean-workflow-id')
    parser.add_argument('--clean-conversation')
    parser.add_argument('--out', type=Path)
    parser.add_argument('--crash-exit-code', type=int, default=17)
    args = parser.parse_args()

    # DBOS registers the agent's steps while it is built, so build it before launching.
    _agent = build_agent(args.store, args.log, args.answer if args.mode == 'crash' else None, args.crash_exit_code)
    asyncio.run(run(args))
    # Skip interpreter finalization: DBOS's and SQLAlchemy's threads can make it slow; all output is written.
    os._exit(0)


if __name__ == '__main__':
    main()
