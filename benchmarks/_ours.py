"""Time our search in a fresh process.

`python -m benchmarks._ours STORE_JSON CONVERSATION QUERIES_JSON REPEATS [BUDGET [MAX_CACHED_RUNS]]`
prints a JSON object after the first search and one more at the end: module import time, the
first search (the cold one: the first search call of a fresh process whose store object and
capability are built, as a worker has them after startup; imports excluded), the warm
repeats in the same process (stopped once they have taken BUDGET seconds), and the peak RSS after
imports and at the end.
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

import asyncio  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from pydantic_ai import RunContext  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402
from pydantic_ai.usage import RunUsage  # noqa: E402

from benchmarks._rss import peak_rss_kb  # noqa: E402
from benchmarks._stores import StoreSpec  # noqa: E402
from durable_recall import ConversationSearch, SnapshotHistorySource  # noqa: E402
from durable_recall.search import SearchRequest  # noqa: E402

_IMPORTED = time.perf_counter()


async def measure(
    spec: StoreSpec, conversation_id: str, queries: list[str], repeats: int, budget: float, max_cached_runs: int | None
) -> dict[str, Any]:
    """The first search from a cold start, then up to `repeats` rounds over `queries` within `budget` seconds.

    The cold result is printed (and flushed) as soon as it is known, so a parent that has to stop
    this process for taking too long still gets it.
    """
    # What a worker builds at startup with its agent (the model, the store object, the capability)
    # is made before the clock: cold is the first search in a fresh process, caches all empty.
    ctx = RunContext[None](deps=None, model=TestModel(), usage=RunUsage(), conversation_id=conversation_id)
    store = spec.open()
    source = (
        SnapshotHistorySource(store)
        if max_cached_runs is None
        else SnapshotHistorySource(store, max_cached_runs=max_cached_runs)
    )
    search = ConversationSearch(source, scope='conversation')
    started = time.perf_counter()
    answer = await search.search(ctx, SearchRequest(query=queries[0]))
    first = time.perf_counter() - started
    head = answer.splitlines()[0] if answer else ''
    _emit({'first': first, 'answer_head': head, 'rss_peak_kb': _rss(), 'partial': True})
    warm: list[float] = []
    warm_started = time.perf_counter()
    for _ in range(repeats):
        for query in queries:
            if time.perf_counter() - warm_started > budget:
                break
            began = time.perf_counter()
            await search.search(ctx, SearchRequest(query=query))
            warm.append(time.perf_counter() - began)
    await store.aclose()
    return {'first': first, 'warm': warm, 'answer_head': head}


def _rss() -> int:
    return peak_rss_kb()


def _emit(out: dict[str, Any]) -> None:
    out['import_seconds'] = _IMPORTED - _STARTED
    out['rss_imported_kb'] = _rss_imported[0]
    out.setdefault('rss_peak_kb', _rss())
    sys.stdout.write(json.dumps(out) + '\n')
    sys.stdout.flush()


_rss_imported: list[int] = [0]


def main(argv: list[str]) -> None:
    """`STORE_JSON CONVERSATION QUERIES_JSON REPEATS [BUDGET_SECONDS [MAX_CACHED_RUNS]]`."""
    spec = StoreSpec.from_json(argv[0])
    conversation_id = argv[1]
    queries: list[str] = json.loads(Path(argv[2]).read_text())
    repeats = int(argv[3])
    budget = float(argv[4]) if len(argv) > 4 else math.inf
    max_cached_runs = int(argv[5]) if len(argv) > 5 else None
    _rss_imported[0] = _rss()
    _emit(asyncio.run(measure(spec, conversation_id, queries, repeats, budget, max_cached_runs)))


if __name__ == '__main__':
    main(sys.argv[1:])
