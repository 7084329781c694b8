"""The Postgres conversation store shares the step store's connector, restart handling included.

A private server (the step store's restart tests' `private_server`: `initdb`/`pg_ctl` on a free
port, never the shared one) is stopped and started under a store whose pool holds idle
connections: every connection in it is then dead, and no load or save may fail for it.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai.conversation import Conversation

from durable_recall.conversations import PostgresConversationStore
from durable_recall.errors import StoreUnavailableError
from tests.stores.test_postgres_restart import PrivateServer
from tests.stores.test_postgres_restart import private_server as private_server  # the fixture, reused

from ._helpers import echo_agent, texts

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


@pytest.fixture
def anyio_backend() -> str:
    return 'asyncio'


async def _chat(store: PostgresConversationStore, cid: str, prompt: str) -> None:
    conversation = await store.load(cid) or Conversation(conversation_id=cid)
    await store.save(await echo_agent().run(prompt, conversation=conversation))


async def test_a_restarted_server_costs_no_failed_load_or_save(private_server: PrivateServer) -> None:
    store = PostgresConversationStore(private_server.url, connect_timeout=3)
    conversations = [f'c-{n}' for n in range(4)]
    try:
        # Several at once, so that the pool holds several idle connections.
        await asyncio.gather(*(_chat(store, cid, f'hello {cid}') for cid in conversations))
        for restart in range(2):
            private_server.stop()
            private_server.start()
            await asyncio.gather(*(_chat(store, cid, f'again {restart}') for cid in conversations))
        loaded = await store.load('c-0')
        assert loaded is not None
        prompts = [text for text in texts(loaded.messages) if not text.startswith('noted')]
        assert prompts == ['hello c-0', 'again 0', 'again 1']
    finally:
        await store.aclose()


async def test_an_outage_is_store_unavailable_and_the_store_recovers(private_server: PrivateServer) -> None:
    store = PostgresConversationStore(private_server.url, connect_timeout=2)
    try:
        await _chat(store, 'c-1', 'before')
        private_server.stop()
        with pytest.raises(StoreUnavailableError, match='operation is safe to retry'):
            await store.load('c-1')
        private_server.start()
        await _chat(store, 'c-1', 'after')
        loaded = await store.load('c-1')
        assert loaded is not None and len(loaded.messages) == 4
    finally:
        await store.aclose()
