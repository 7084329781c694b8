"""The process `test_conversation_dbos.py` crashes and recovers: the conversation loop under DBOS.

Run as `python -m tests.durable._conversation_crash_app <mode> --system-db URL --store PATH ...` from
the repository root. Modes:

- `crash`: start the 7-turn loop (`_conversation_loop.converse`) under `--workflow-id`; the second
  save commits and the process ends itself (`os._exit(--crash-exit-code)`) before the save step
  returns, so DBOS never checkpoints it: the commit's answer is lost, as when a worker is killed.
- `recover`: launch DBOS on the same system database, which recovers the pending workflow; wait for
  it; run the same loop uncrashed under `--clean-workflow-id` as the reference; write both outputs,
  both stored conversations and the recovered workflow's step names to `--out` as JSON.
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

from durable_recall.dbos import DBOSConversationStore

from ._conversation_loop import FlakyConversationStore, converse, recall_agent, stored

AGENT_NAME = 'conversation_dbos'


class CrashingStore(FlakyConversationStore):
    def __init__(self, *args: Any, exit_code: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exit_code = exit_code

    def on_lost_answer(self, conversation_id: str, count: int) -> None:
        os._exit(self.exit_code)


_store: CrashingStore | None = None
_conversations: DBOSConversationStore | None = None
_agent: Agent[None, str] | None = None


@DBOS.workflow(name='durable_recall_tests.conversation_loop')
async def conversation_loop(conversation_id: str) -> list[str]:
    assert _conversations is not None and _agent is not None
    return await converse(_conversations, _agent, conversation_id)


async def run(args: argparse.Namespace) -> None:
    assert _store is not None
    DBOS(
        config={
            'name': 'durable_recall_conversation_crash_tests',
            'system_database_url': args.system_db,
            'enable_otlp': False,
            'log_level': 'WARNING',
            'notification_listener_polling_interval_sec': 0.01,
        }
    )
    DBOS.launch()
    try:
        if args.mode == 'crash':
            _store.fail_after_commit.add((args.conversation, 2))
            with SetWorkflowID(args.workflow_id):
                await conversation_loop(args.conversation)
            raise AssertionError('the loop finished: the second save never committed')
        handle = await DBOS.retrieve_workflow_async(args.workflow_id)
        recovered: list[str] = await handle.get_result()
        steps = [step['function_name'] for step in await DBOS.list_workflow_steps_async(args.workflow_id)]
        with SetWorkflowID(args.clean_workflow_id):
            clean = await conversation_loop(args.clean_conversation)
        result = {
            'recovered': recovered,
            'clean': clean,
            'steps': steps,
            'recovered_store': await stored(_store, args.conversation),
            'clean_store': await stored(_store, args.clean_conversation),
            'writes': _store.writes,
        }
        args.out.write_text(json.dumps(result))
    finally:
        DBOS.destroy()


def main() -> None:
    global _store, _conversations, _agent
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('mode', choices=['crash', 'recover'])
    parser.add_argument('--system-db', required=True)
    parser.add_argument('--store', type=Path, required=True)
    parser.add_argument('--workflow-id', required=True)
    parser.add_argument('--conversation', required=True)
    parser.add_argument('--clean-workflow-id')
    parser.add_argument('--clean-conversation')
    parser.add_argument('--out', type=Path)
    parser.add_argument('--crash-exit-code', type=int, default=17)
    args = parser.parse_args()

    # DBOS registers steps while the store wrapper and the agent are built: before launching.
    _store = CrashingStore(args.store, exit_code=args.crash_exit_code)
    _conversations = DBOSConversationStore(_store, name='support')
    _agent = recall_agent(AGENT_NAME, _store, DBOSDurability())
    asyncio.run(run(args))
    os._exit(0)  # DBOS's and SQLAlchemy's threads can make interpreter finalization slow; all output is written.


if __name__ == '__main__':
    main()
