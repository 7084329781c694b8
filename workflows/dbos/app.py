"""Hold the sample conversation as a DBOS workflow: `python -m workflows.dbos.app [--postgres URL]`.

By default DBOS keeps its system database in the SQLite file `durable-recall-sample-dbos.db`
and durable-recall its store in `durable-recall-sample.db` (or what `DURABLE_RECALL_STORE`
names), both in the working directory. `--postgres URL` puts both in that PostgreSQL database.

The agent's model requests and its durable operations (the search, the store writes) are DBOS
steps, so a process killed mid-conversation resumes where it stopped when it is launched again:
DBOS recovers this executor's pending workflows on launch, and completed steps (the search
included) return their recorded results instead of running again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from collections.abc import Sequence

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage

from durable_recall import DurableRecallError, StepStore, open_store
from durable_recall.stores import redact_url
from workflows.conversation import DEFAULT_STORE, STORE_VARIABLE, TURNS, capabilities, check_store, fail, scripted_model

APP_NAME = 'durable_recall_sample'
DEFAULT_SYSTEM_DATABASE = 'sqlite:///durable-recall-sample-dbos.db'

_agent: Agent[None, str] | None = None
"""Built by `main` before DBOS launches: DBOS registers the agent's steps while it is built."""


def build_agent(store: StepStore) -> Agent[None, str]:
    """The sample conversation's agent (see `workflows/conversation.py`) under `DBOSDurability()`."""
    return Agent(scripted_model(), name='support', capabilities=[*capabilities(store), DBOSDurability()])


@DBOS.workflow(name='durable_recall_sample.conversation')
async def conversation(conversation_id: str, turns: list[str], model: str | None = None) -> list[str]:
    """Play the turns as agent runs under one conversation id; return the replies."""
    assert _agent is not None, 'call main(), which builds the agent before DBOS launches'
    history: list[ModelMessage] | None = None
    replies: list[str] = []
    for prompt in turns:
        result = await _agent.run(prompt, message_history=history, conversation_id=conversation_id, model=model)
        history = result.all_messages()
        replies.append(result.output)
    return replies


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Hold the durable-recall sample conversation under DBOS.')
    parser.add_argument('--postgres', metavar='URL', help='keep the DBOS system database and the store here')
    parser.add_argument(
        '--system-db', metavar='URL', help=f'the DBOS system database (default: {DEFAULT_SYSTEM_DATABASE})'
    )
    parser.add_argument('--store', metavar='URL', help=f'the store (default: ${STORE_VARIABLE} or {DEFAULT_STORE})')
    parser.add_argument('--model', metavar='PROVIDER:NAME', help='a real model, e.g. openai:gpt-5 (default: scripted)')
    parser.add_argument('--conversation-id', help='the conversation id, also the workflow id (default: a new one)')
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Launch DBOS, hold the conversation, shut down; returns (prompt, reply) pairs."""
    global _agent
    spec = args.store or args.postgres or os.environ.get(STORE_VARIABLE) or DEFAULT_STORE
    try:
        store = open_store(spec)
    except (DurableRecallError, ImportError) as error:
        fail('app', f'cannot open the store {redact_url(spec)!r}: {redact_url(str(error))}')
    try:
        await check_store(store, 'app')  # before DBOS launches: a bad store fails here, with one line
    except BaseException:
        await store.aclose()
        raise
    _agent = build_agent(store)
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
        conversation_id = args.conversation_id or f'sample-{uuid.uuid4().hex[:12]}'
        # The workflow id names the conversation: running it again returns the recorded replies.
        with SetWorkflowID(f'conversation-{conversation_id}'):
            replies = await conversation(conversation_id, list(TURNS), args.model)
    finally:
        DBOS.destroy()
        await store.aclose()
    print(f'conversation {conversation_id}:\n')
    for prompt, reply in zip(TURNS, replies, strict=True):
        print(f'user:      {prompt}\nassistant: {reply}\n')
    return list(zip(TURNS, replies, strict=True))


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
