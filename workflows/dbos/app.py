"""Support chats under DBOS, one workflow per turn: `python -m workflows.dbos.app [--conversations N]`.

Each user message is one DBOS workflow (`chat_turn`, id `chat-<conversation id>-turn-<n>`),
enqueued on a partitioned queue whose partition key is the conversation id, with at most one
workflow of a partition running at a time: turns of one conversation run one after another, in
order, while different conversations run side by side. A turn reads the previous turn's recorded
result (its compacted message history) and returns its own: the window travels from turn to
turn through DBOS's system database, bounded by compaction, and everything older is in the
store, where the search tool finds it.

By default DBOS keeps its system database in the SQLite file `durable-recall-sample-dbos-system.db`
and the store is `durable-recall-sample-dbos.db` (or what `DURABLE_RECALL_STORE` names), both in
the working directory. `--postgres URL` puts both in that PostgreSQL database.

The agent's model requests and its durable operations (the search, the store writes) are DBOS
steps, so a process killed mid-conversation resumes where it stopped when it is launched again:
DBOS recovers this executor's pending turn on launch, and completed steps return their recorded
results instead of running again. Reusing a conversation id resumes that conversation's script:
turns already answered are not sent again (a turn's workflow id is its identity, so sending the
same turn twice returns the recorded reply).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from dbos import DBOS, SetEnqueueOptions, SetWorkflowID, WorkflowHandleAsync
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model

from durable_recall import DurableRecallError, StepStore, open_store
from workflows.conversation import (
    AGENT_NAME,
    INSTRUCTIONS,
    MODEL_VARIABLE,
    STORE_VARIABLE,
    THINK_VARIABLE,
    TURNS,
    capabilities,
    check_model,
    check_store,
    configured_model,
    fail,
)

APP_NAME = 'durable_recall_sample'
DEFAULT_STORE = 'sqlite:///durable-recall-sample-dbos.db'
"""The DBOS sample's own store (the Temporal sample has another)."""
DEFAULT_SYSTEM_DATABASE = 'sqlite:///durable-recall-sample-dbos-system.db'
QUEUE = 'durable_recall_sample_chat'
"""Partitioned by conversation id, one running workflow per partition: a conversation's turns in order."""

QUEUE_POLL = 0.1
"""Seconds between two looks at the queue and at a turn's result: a chat's reply should not wait the default second."""

_agent: Agent[None, str] | None = None
"""Built by `launch` before DBOS launches: DBOS registers the agent's steps while it is built."""


@dataclass
class TurnResult:
    """What a turn's workflow returns (recorded by DBOS): the reply, and the window for the next turn."""

    turn: int
    reply: str
    history: list[ModelMessage] = field(default_factory=list[ModelMessage])


def turn_workflow_id(conversation_id: str, turn: int) -> str:
    """The workflow id of a conversation's turn `turn` (from 1): the turn's identity."""
    return f'chat-{conversation_id}-turn-{turn:05d}'


def build_agent(store: StepStore, model: Model | str | None = None) -> Agent[None, str]:
    """The sample's agent (see `workflows/conversation.py`) under `DBOSDurability()`."""
    return Agent(
        model or configured_model(),
        name=AGENT_NAME,
        instructions=INSTRUCTIONS,
        capabilities=[*capabilities(store), DBOSDurability()],
    )


def install_agent(agent: Agent[None, str]) -> None:
    """Make `agent` the one `chat_turn` runs (build it before `DBOS.launch()`)."""
    global _agent
    _agent = agent


@DBOS.workflow(name='durable_recall_sample.chat_turn')
async def chat_turn(conversation_id: str, turn: int, prompt: str) -> TurnResult:
    """One user message: run the agent on it with the previous turn's window; return the reply and the new window."""
    assert _agent is not None, 'build the agent (install_agent) before DBOS launches'
    history: list[ModelMessage] | None = None
    if turn > 1:
        previous: WorkflowHandleAsync[TurnResult] = await DBOS.retrieve_workflow_async(
            turn_workflow_id(conversation_id, turn - 1)
        )
        history = (await previous.get_result()).history  # recorded: a recovered turn reads the same window
    result = await _agent.run(prompt, message_history=history, conversation_id=conversation_id)
    return TurnResult(turn, result.output, result.all_messages())


async def register_queue() -> None:
    """Register the chat queue (after launch: DBOS keeps queue settings in its system database)."""
    await DBOS.register_queue_async(QUEUE, partition_concurrency=1, polling_interval_sec=QUEUE_POLL)


async def send(conversation_id: str, turn: int, prompt: str) -> TurnResult:
    """Enqueue turn `turn` of the conversation and wait for its reply (the recorded one if it ran before)."""
    with SetWorkflowID(turn_workflow_id(conversation_id, turn)), SetEnqueueOptions(queue_partition_key=conversation_id):
        handle = await DBOS.enqueue_workflow_async(QUEUE, chat_turn, conversation_id, turn, prompt)
    return await handle.get_result(polling_interval_sec=QUEUE_POLL)


async def turns_taken(conversation_id: str) -> int:
    """How many turns of the conversation have finished (a turn in flight is not counted)."""
    done = await DBOS.list_workflows_async(
        workflow_id_prefix=f'chat-{conversation_id}-turn-', status='SUCCESS', load_input=False, load_output=False
    )
    return len(done)


async def talk(conversation_id: str, prompts: Sequence[str] = TURNS, *, label: str = '') -> list[TurnResult]:
    """Send the prompts the conversation has not had, one at a time; print each reply as it comes."""
    taken = await turns_taken(conversation_id)
    prefix = f'[{label}] ' if label else ''
    if taken >= len(prompts):
        say(f'conversation {conversation_id} has taken all {taken} turns of the script: nothing left to send', label)
        return []
    if taken:
        say(f'conversation {conversation_id} has taken {taken} turns already; continuing at turn {taken + 1}', label)
    if not label:
        print(f'conversation {conversation_id}:\n', flush=True)
    results: list[TurnResult] = []
    for number, prompt in enumerate(prompts[taken:], start=taken + 1):
        result = await send(conversation_id, number, prompt)
        results.append(result)
        print(f'{prefix}user:      {prompt}\n{prefix}assistant: {result.reply}\n', flush=True)
    return results


def say(message: str, label: str = '') -> None:
    """One status line on stderr (stdout carries the conversation)."""
    import sys

    sys.stderr.write(f'app: {f"[{label}] " if label else ""}{message}\n')
    sys.stderr.flush()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Hold durable-recall sample conversations under DBOS.')
    parser.add_argument('--postgres', metavar='URL', help='keep the DBOS system database and the store here')
    parser.add_argument(
        '--system-db', metavar='URL', help=f'the DBOS system database (default: {DEFAULT_SYSTEM_DATABASE})'
    )
    parser.add_argument('--store', metavar='URL', help=f'the store (default: ${STORE_VARIABLE} or {DEFAULT_STORE})')
    parser.add_argument(
        '--model',
        metavar='PROVIDER:NAME',
        help=f'a real model, e.g. openai:gpt-5 (default: ${MODEL_VARIABLE} or scripted)',
    )
    parser.add_argument('--think', type=float, metavar='SECONDS', help='seconds the scripted model takes per reply')
    parser.add_argument('--conversations', type=int, default=1, metavar='N', help='conversations at once (default 1)')
    parser.add_argument(
        '--conversation-id', help='the conversation id (default: a new one); with N conversations, ID-1 ... ID-N'
    )
    arguments = parser.parse_args(argv)
    if arguments.conversations < 1:
        parser.error(f'--conversations must be at least 1, got {arguments.conversations}')
    return arguments


async def run(args: argparse.Namespace) -> dict[str, list[TurnResult]]:
    """Launch DBOS, hold the conversations, shut down; returns each conversation's new turns."""
    if args.model:
        os.environ[MODEL_VARIABLE] = args.model
    if args.think is not None:
        os.environ[THINK_VARIABLE] = str(args.think)
    if model := os.environ.get(MODEL_VARIABLE):
        check_model(model, 'app')
    spec = args.store or args.postgres or os.environ.get(STORE_VARIABLE) or DEFAULT_STORE
    try:
        store = open_store(spec)
    except (DurableRecallError, ImportError) as error:
        fail('app', f'cannot open the store {spec!r}: {error}')
    try:
        await check_store(store, 'app')  # before DBOS launches: a bad store fails here, with one line
    except BaseException:
        await store.aclose()
        raise
    install_agent(build_agent(store))
    DBOS(
        config={
            'name': APP_NAME,
            'system_database_url': args.system_db or _system_database(args.postgres) or DEFAULT_SYSTEM_DATABASE,
            'enable_otlp': False,
            'log_level': 'WARNING',
        }
    )
    DBOS.launch()
    try:
        await register_queue()
        base = args.conversation_id or f'sample-{uuid.uuid4().hex[:12]}'
        ids = [base] if args.conversations == 1 else [f'{base}-{n}' for n in range(1, args.conversations + 1)]
        many = len(ids) > 1
        results = await asyncio.gather(*(talk(each, label=each if many else '') for each in ids))
    finally:
        DBOS.destroy()
        await store.aclose()
    return dict(zip(ids, results, strict=True))


def _system_database(postgres: str | None) -> str | None:
    # DBOS picks its driver from a plain `postgresql://` URL.
    if postgres is None:
        return None
    scheme, separator, rest = postgres.partition('://')
    return f'postgresql{separator}{rest}' if scheme.startswith('postgres') else postgres


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(run(parse_args(argv)))


if __name__ == '__main__':
    main()
