"""A separate OS process that saves turns to a shared conversation: `python -m tests.conversations._worker`.

Arguments: `<backend> <location> <schema or -> <conversation id> <name> <turns> <go file>`. The worker
prints `loaded` once it has loaded the conversation, then waits for the go file, so the parent can
make two workers race from the same revision. With `turns` 0 it saves one turn and reports `saved`
or `conflict`; otherwise it saves `turns` turns, retrying each on conflict, and reports how many
conflicts it met.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict, ConversationStore

from durable_recall.conversations import PostgresConversationStore, SqliteConversationStore
from tests.conversations._helpers import echo_agent


def _store(backend: str, location: str, schema: str) -> ConversationStore:
    if backend == 'sqlite':
        return SqliteConversationStore(database=location)
    return PostgresConversationStore(location, schema=schema)


async def _load(store: ConversationStore, conversation_id: str) -> Conversation:
    return await store.load(conversation_id) or Conversation(conversation_id=conversation_id)


async def main(backend: str, location: str, schema: str, conversation_id: str, name: str, turns: int, go: str) -> None:
    store = _store(backend, location, schema)
    agent = echo_agent()
    loaded = await _load(store, conversation_id)
    print('loaded', flush=True)
    while not Path(go).exists():
        time.sleep(0.005)
    if turns == 0:
        try:
            await store.save(await agent.run(f'{name} turn', conversation=loaded))
            print('saved', flush=True)
        except ConversationConflict:
            print('conflict', flush=True)
        return
    conflicts = 0
    for turn in range(turns):
        while True:
            try:
                await store.save(await agent.run(f'{name} turn {turn}', conversation=loaded))
                break
            except ConversationConflict:
                conflicts += 1
            loaded = await _load(store, conversation_id)
        loaded = await _load(store, conversation_id)
    print(f'conflicts {conflicts}', flush=True)
    if isinstance(store, SqliteConversationStore | PostgresConversationStore):
        await store.aclose()


if __name__ == '__main__':
    backend, location, schema, conversation_id, name, turns, go = sys.argv[1:]
    asyncio.run(main(backend, location, schema, conversation_id, name, int(turns), go))
