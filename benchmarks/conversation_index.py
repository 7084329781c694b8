"""Cold search over a SQLite conversation store: the persistent index against the in-memory path.

Run from the repo root: `python -m benchmarks.conversation_index [--conversations 200] [--exchanges 50]`.

Writes N conversations of E exchanges (two messages each, a Zipf-ish vocabulary) into a
`SqliteConversationStore` with `save`, builds the persistent index once (the first search of any
process does that, then saves keep it current), then times a cold search (a new store object and a
new engine: what a fresh worker does) with `scope='all'` on each path: the persistent index, and the
same `ConversationStoreSource` behind a plain `HistorySource`, which a fresh process indexes in memory
after reading every conversation. Also a conversation-scoped cold search, the tool's usual scope.
Medians of `--samples` runs; module imports are done before timing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from durable_recall.base import RunRecord
from durable_recall.conversations import ConversationStoreSource, SqliteConversationStore
from durable_recall.history import RunHistory
from durable_recall.index import Bm25Params
from durable_recall.search import SearchEngine, SearchRequest, SearchScope
from durable_recall.text import DEFAULT_SKIP_TOOLS

_VOCABULARY = [f'w{n}' for n in range(3000)]
_WEIGHTS = [1 / (rank + 1) for rank in range(len(_VOCABULARY))]


class _InMemory:
    """The source behind a plain `HistorySource`: the engine indexes it in memory."""

    def __init__(self, source: ConversationStoreSource) -> None:
        self._source = source

    async def list_runs(self, *, conversation_id: str | None = None) -> list[RunRecord]:
        return await self._source.list_runs(conversation_id=conversation_id)

    async def run_history(self, run_id: str) -> RunHistory | None:
        return await self._source.run_history(run_id)


def _engine(source: ConversationStoreSource | _InMemory) -> SearchEngine:
    return SearchEngine(
        source=source,
        params=Bm25Params(),
        max_matches=5,
        context_lines=2,
        max_result_bytes=16_000,
        skip_tools=DEFAULT_SKIP_TOOLS,
    )


def _text(rng: random.Random) -> str:
    return ' '.join(rng.choices(_VOCABULARY, _WEIGHTS, k=rng.randint(8, 40)))


async def _write(store: SqliteConversationStore, conversations: int, exchanges: int, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(conversations):
        messages: list[ModelMessage] = []
        for _ in range(exchanges):
            messages.append(ModelRequest(parts=[UserPromptPart(_text(rng))]))
            messages.append(ModelResponse(parts=[TextPart(_text(rng))]))
        await store.save(Conversation(conversation_id=f'chat-{n}', messages=messages))


async def _cold(path: Path, persistent: bool, scope: SearchScope, query: str) -> float:
    store = SqliteConversationStore(path)
    try:
        source = ConversationStoreSource(store)
        started = time.perf_counter()
        engine = _engine(source if persistent else _InMemory(source))
        conversation_id = None if scope == 'all' else 'chat-0'
        await engine.search(SearchRequest(query=query), scope=scope, conversation_id=conversation_id)
        return time.perf_counter() - started
    finally:
        await store.aclose()


async def measure(conversations: int, exchanges: int, samples: int, work: Path) -> str:
    """Write the store, index it once, then time cold searches on both paths; the report's lines."""
    path = work / 'conversations.db'
    store = SqliteConversationStore(path)
    try:
        await _write(store, conversations, exchanges, seed=5)
        started = time.perf_counter()
        await _engine(ConversationStoreSource(store)).search(
            SearchRequest(query='w1'), scope='all', conversation_id=None
        )
        build = time.perf_counter() - started
    finally:
        await store.aclose()
    query = 'w7 w120 w999'
    lines = [
        f'{conversations:,} conversations x {exchanges:,} exchanges ({conversations * exchanges * 2:,} messages); '
        f'first search builds the index in {build:.2f} s',
    ]
    for scope in ('all', 'conversation'):
        timed = {
            persistent: statistics.median([await _cold(path, persistent, scope, query) for _ in range(samples)])
            for persistent in (True, False)
        }
        lines.append(
            f'cold search, scope={scope!r}: persistent {timed[True] * 1000:.0f} ms, in-memory '
            f'{timed[False] * 1000:.0f} ms ({timed[False] / timed[True]:.1f}x)'
        )
    return '\n'.join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, measure, print."""
    parser = argparse.ArgumentParser(prog='python -m benchmarks.conversation_index', description=__doc__)
    parser.add_argument('--conversations', type=int, default=200)
    parser.add_argument('--exchanges', type=int, default=50)
    parser.add_argument('--samples', type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='bench-conversation-index-') as work:
        print(asyncio.run(measure(args.conversations, args.exchanges, args.samples, Path(work))))


if __name__ == '__main__':
    main()
