"""How long the inspector takes to show the first page of a 100,000-message conversation.

Builds (once, cached under `benchmarks/.cache/`) a SQLite store holding one conversation of
100,000 messages: `--runs` runs (default 100) of `--messages / --runs` messages each, every run
saved as snapshots the way `StepPersistence` saves them (deltas, through the store's batch write), and
its search index caught up, as any search or `durable-recall index` leaves it. Then times, in this
process, over the inspector's real ASGI app (called as ASGI, no network):

* `GET /conversation?id=...` (the first page: 100 messages) cold, on a freshly opened store;
* the same page warm, and a page from the middle (`offset=50000`), `--rounds` times each.

The target is the first page under 300 ms. Run it with `python -m benchmarks.inspector_page`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from benchmarks._asgi import asgi_get
from durable_recall import SqliteStepStore
from durable_recall.base._codec import dump_messages
from durable_recall.cli import main as cli_main
from durable_recall.cli._serve_scope import ServeScope
from durable_recall.cli._ui import build_ui_app
from durable_recall.persistence import snapshot_state
from durable_recall.persistence._delta import diff_history
from durable_recall.stores import PersistBatch, RunRegistration, SnapshotDelta

CONVERSATION = 'big-conversation'
CACHE = Path(__file__).parent / '.cache'
STEP = 50
"""Messages added per snapshot (a step of the agent run, saved as one delta)."""


def _messages(run: int, count: int, start: datetime) -> list[ModelMessage]:
    messages: list[ModelMessage] = []
    for i in range(0, count, 2):
        moment = start + timedelta(seconds=i)
        messages.append(
            ModelRequest(
                parts=[UserPromptPart(f'run {run} question {i}: where is order ORD-{run}-{i}?', timestamp=moment)]
            )
        )
        messages.append(
            ModelResponse(
                parts=[TextPart(f'order ORD-{run}-{i} ships from warehouse W{i % 17} on day {i % 31}')],
                timestamp=moment,
            )
        )
    return messages


async def _build(path: Path, total: int, runs: int) -> None:
    store = SqliteStepStore(path)
    try:
        per_run = total // runs
        start = datetime(2026, 1, 1, tzinfo=UTC)
        for run in range(runs):
            run_id = f'run-{run:04d}'
            registration = RunRegistration(
                run_id=run_id, conversation_id=CONVERSATION, agent_name='bench', token=run_id
            )
            messages = _messages(run, per_run, start + timedelta(hours=run))
            deltas: list[SnapshotDelta] = []
            saved: list[ModelMessage] = []
            for index, end in enumerate(range(STEP, per_run + 1, STEP)):
                current = messages[:end]
                diff = diff_history(saved, current)
                deltas.append(
                    SnapshotDelta(
                        run_id=run_id,
                        index=index,
                        step_index=index,
                        state=snapshot_state(current),
                        segments=diff.segments,
                        messages=dump_messages(diff.new_messages),
                    )
                )
                saved = current
            await store.save_batch(PersistBatch(registration=registration, deltas=deltas))
    finally:
        await store.aclose()


def _store(total: int, runs: int) -> Path:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f'inspector-{total}-{runs}.db'
    if not path.exists():
        began = time.perf_counter()
        partial = path.with_suffix('.partial.db')
        partial.unlink(missing_ok=True)
        asyncio.run(_build(partial, total, runs))
        assert cli_main(['index', '--store', str(partial), '--all']) == 0
        partial.rename(path)
        print(f'built {path} in {time.perf_counter() - began:.1f}s')
    return path


async def _time(app: Any, target: str) -> float:
    began = time.perf_counter()
    status, text = await asgi_get(app, target)
    elapsed = time.perf_counter() - began
    assert status == 200, text[:500]
    assert 'class="msg' in text
    return elapsed


async def _measure(path: Path, messages: int, rounds: int) -> None:
    store = SqliteStepStore(path)
    try:
        app = build_ui_app(store, ServeScope(frozenset({CONVERSATION})), str(path))
        first = f'/conversation?id={CONVERSATION}'
        middle = f'{first}&offset={messages // 2}'
        cold = await _time(app, first)
        warm = [await _time(app, first) for _ in range(rounds)]
        deep = [await _time(app, middle) for _ in range(rounds)]
        page = (await asgi_get(app, first))[1]
    finally:
        await store.aclose()
    shown = page.count('class="msg')
    runs = page.count('class="run-head"')
    print(f'store: {path} ({path.stat().st_size / 1e6:.0f} MB), {messages} messages in one conversation')
    print(
        f'first page ({shown} messages, {runs} run headers): cold {cold * 1000:.0f} ms; '
        f'warm median {statistics.median(warm) * 1000:.0f} ms'
    )
    print(f'page at offset {messages // 2}: warm median {statistics.median(deep) * 1000:.0f} ms')
    print(f'target, the first page under 300 ms (cold): {"met" if cold < 0.3 else "NOT met"}')


def main() -> None:
    """Parse the arguments, build the store if it is not cached, and print the timings."""
    parser = argparse.ArgumentParser(prog='python -m benchmarks.inspector_page', description=__doc__)
    parser.add_argument('--messages', type=int, default=100_000)
    parser.add_argument('--runs', type=int, default=100)
    parser.add_argument('--rounds', type=int, default=20)
    args = parser.parse_args()
    path = _store(args.messages, args.runs)
    asyncio.run(_measure(path, args.messages, args.rounds))


if __name__ == '__main__':
    main()
