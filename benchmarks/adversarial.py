"""Searches over adversarial 1 MB messages with adversarial queries: no search may hold a worker for long.

A tenant controls what its messages hold and what the model asks; neither may make a search take
seconds of CPU (it runs on the worker's event loop). This stores 1 MB messages built to be slow to
clip, tokenize or render (one 1 MB word that every prefix of the query matches inside, a million
one-letter words, a 1 MB run of accented letters, of CJK, repeated matches) and asks queries built
against them (every prefix of the long word, 64 terms, CJK bigrams), on the SQLite step store and
on pydantic-ai's in-memory conversation store, then reports per query the warm search time
(median and worst of `--rounds`), and the longest the event loop was held during any search (a
ticker task measures it). The first search of each store, which indexes the 1 MB messages, is
reported apart: indexing is linear in what was stored, once per message.

    python -m benchmarks.adversarial [--rounds 5] [--json PATH]

Target: every warm search under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from durable_recall import SnapshotHistorySource, SqliteStepStore, StepPersistence
from durable_recall.index import Bm25Params
from durable_recall.search import SearchEngine, SearchRequest

MB = 1_000_000
MESSAGES = {
    'one long word': 'a' * MB + ' zebra',
    'a million words': 'a ' * (MB // 2) + 'zebra',
    'accented run': 'é' * MB + ' zebra',
    'cjk run': '東' * MB + ' 東京 zebra',
    'repeated match': 'zebra ' * (MB // 6),
    'mixed words': ('Straße ﬁle İstanbul aé ' * (MB // 24)) + 'zebra',
}
"""What a tenant stored, one 1 MB user message each (in one conversation)."""

QUERIES = {
    'every prefix': ' '.join(['zebra', *('a' * n for n in range(1, 64))]),
    'one term': 'zebra',
    'cjk bigrams': '東京 東東 京東 zebra',
    'accents': 'é ée éé strasse file istanbul',
    '64 absent terms': ' '.join(f'w{n}x' for n in range(64)) + ' zebra',
}
"""What the model asked."""

CONVERSATION = 'tenant-1'


def _reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('noted')])


def _engine(source: object) -> SearchEngine:
    return SearchEngine(
        source=source,  # pyright: ignore[reportArgumentType]
        params=Bm25Params(),
        max_matches=5,
        context_lines=1,
        max_result_bytes=16_000,
        skip_tools=(),
    )


async def _loop_held(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """`work`'s wall time, and the longest a ticker waiting 1 ms at a time was held meanwhile (seconds)."""
    longest = 0.0
    done = asyncio.Event()

    async def tick() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last - 0.001)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    start = time.perf_counter()
    await work()
    elapsed = time.perf_counter() - start
    done.set()
    await ticker
    return elapsed, longest


async def _measure(name: str, engine: SearchEngine, rounds: int) -> dict[str, object]:
    async def first() -> object:
        return await engine.search(SearchRequest(query='zebra'), scope='conversation', conversation_id=CONVERSATION)

    cold, cold_held = await _loop_held(first)
    queries: dict[str, dict[str, float]] = {}
    held = 0.0
    for label, query in QUERIES.items():
        times: list[float] = []
        for _ in range(rounds):

            async def one(query: str = query) -> object:
                request = SearchRequest(query=query)
                return await engine.search(request, scope='conversation', conversation_id=CONVERSATION)

            elapsed, longest = await _loop_held(one)
            times.append(elapsed)
            held = max(held, longest)
        queries[label] = {'median_ms': statistics.median(times) * 1000, 'max_ms': max(times) * 1000}
    return {
        'store': name,
        'first_search_ms': cold * 1000,
        'first_search_loop_held_ms': cold_held * 1000,
        'warm': queries,
        'warm_loop_held_ms': held * 1000,
    }


async def _sqlite_steps(directory: Path, rounds: int) -> dict[str, object]:
    store = SqliteStepStore(directory / 'steps.db')
    agent = Agent(FunctionModel(_reply), capabilities=[StepPersistence(store)])
    for text in MESSAGES.values():
        await agent.run(text, conversation_id=CONVERSATION)
    try:
        return await _measure('SqliteStepStore (SnapshotHistorySource)', _engine(SnapshotHistorySource(store)), rounds)
    finally:
        await store.aclose()


async def _memory_conversations(rounds: int) -> dict[str, object] | None:
    try:
        from pydantic_ai.conversation import Conversation
        from pydantic_ai.conversation_store import InMemoryConversationStore

        from durable_recall.conversations import ConversationStoreSource
    except ImportError:  # pydantic-ai before the conversation store API
        return None
    store = InMemoryConversationStore()
    agent = Agent(FunctionModel(_reply))
    conversation = Conversation(conversation_id=CONVERSATION)
    for text in MESSAGES.values():
        result = await agent.run(text, conversation=await store.load(CONVERSATION) or conversation)
        await store.save(result)
    return await _measure(
        'InMemoryConversationStore (ConversationStoreSource)', _engine(ConversationStoreSource(store)), rounds
    )


async def main(rounds: int) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as directory:
        results = [await _sqlite_steps(Path(directory), rounds)]
    conversations = await _memory_conversations(rounds)
    if conversations is not None:
        results.append(conversations)
    return results


def _report(results: list[dict[str, object]]) -> str:
    lines = [f'{len(MESSAGES)} messages of 1 MB; warm times are median / worst of the rounds.']
    for result in results:
        lines.append(
            f'\n{result["store"]}: first search (indexes the 1 MB messages) {result["first_search_ms"]:.0f} ms,'
            f' event loop held at most {result["first_search_loop_held_ms"]:.0f} ms'
        )
        warm = result['warm']
        assert isinstance(warm, dict)
        for label, figures in warm.items():  # pyright: ignore[reportUnknownVariableType]
            lines.append(f'  {label:<18} {figures["median_ms"]:7.1f} ms / {figures["max_ms"]:7.1f} ms')
        lines.append(f'  event loop held at most {result["warm_loop_held_ms"]:.1f} ms during a warm search')
    return '\n'.join(lines)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--json', type=Path, default=None)
    args = parser.parse_args()
    found = asyncio.run(main(args.rounds))
    print(_report(found))
    if args.json is not None:
        args.json.write_text(json.dumps(found, indent=2))
