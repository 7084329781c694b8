"""How long building a durable agent takes, with and without StepPersistence.

Building an agent under `TemporalDurability()` builds a pydantic schema for every durable
operation's arguments. An operation that takes a `list[ModelMessage]` pays for the whole message
union (the reference StepPersistence: 6-7 s here); ours takes small dataclasses of primitives.

Run: `python -m benchmarks.agent_build` (medians of several builds, each in a fresh process so
pydantic's schema caches start cold; the ratio is measured in the same run).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

_BUILD = r"""
import json, time
t0 = time.perf_counter()
from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.models.test import TestModel
from durable_recall import InMemoryStepStore, SlidingWindowCompaction, StepPersistence
imported = time.perf_counter()
capabilities = [TemporalDurability()]
if {persist}:
    capabilities[:0] = [StepPersistence(InMemoryStepStore()), SlidingWindowCompaction(max_messages=40)]
Agent(TestModel(), name='bench', capabilities=capabilities)
built = time.perf_counter()
print(json.dumps({{'import': imported - t0, 'build': built - imported}}))
"""


def _measure(persist: bool) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, '-c', _BUILD.format(persist=persist)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(repeats: int = 5) -> None:
    """Print the median build time of a Temporal-durable agent with and without persistence."""
    plain = [_measure(False)['build'] for _ in range(repeats)]
    persisted = [_measure(True)['build'] for _ in range(repeats)]
    p, q = statistics.median(plain), statistics.median(persisted)
    print(f'durable agent build, median of {repeats} cold processes:')
    print(f'  TemporalDurability only                      {p * 1000:8.1f} ms')
    print(f'  + StepPersistence + SlidingWindowCompaction  {q * 1000:8.1f} ms  (x{q / p:.2f})')


if __name__ == '__main__':
    main()
