"""A separate OS process that searches a shared conversation: `python -m tests.conversations._search_worker`.

Arguments: `<backend> <location> <schema or -> <conversation id> <go file> <queries...>`. The worker
opens the store (a cold process: nothing cached), prints `ready`, waits for the go file, so the
parent can release two workers together onto a conversation nobody has indexed yet, then runs the
queries with `scope='conversation'` and prints the answers as one JSON list.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from durable_recall.conversations import ConversationStoreSource, PostgresConversationStore, SqliteConversationStore
from durable_recall.index import Bm25Params
from durable_recall.search import SearchEngine, SearchRequest
from durable_recall.text import DEFAULT_SKIP_TOOLS


async def main(backend: str, location: str, schema: str, conversation_id: str, go: str, queries: list[str]) -> None:
    store = (
        SqliteConversationStore(location) if backend == 'sqlite' else PostgresConversationStore(location, schema=schema)
    )
    engine = SearchEngine(
        source=ConversationStoreSource(store),
        params=Bm25Params(),
        max_matches=4,
        context_lines=1,
        max_result_bytes=6_000,
        skip_tools=DEFAULT_SKIP_TOOLS,
    )
    print('ready', flush=True)
    while not Path(go).exists():
        time.sleep(0.002)
    answers = [
        await engine.search(SearchRequest(query=query), scope='conversation', conversation_id=conversation_id)
        for query in queries
    ]
    print(json.dumps(answers), flush=True)
    await store.aclose()


if __name__ == '__main__':
    backend, location, schema, conversation_id, go, *queries = sys.argv[1:]
    asyncio.run(main(backend, location, schema, conversation_id, go, queries))
