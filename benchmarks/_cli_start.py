"""How long the `durable-recall` command takes to start, and which import makes it slow.

Someone inspecting a store runs the command many times; each is a fresh process, so its start
time is the whole cost of a quick look. Measured here: the median wall time of `durable-recall
--help` (imports and parsing only) and of `durable-recall conversations --store FILE` (imports,
opening a store and a query) over a few fresh processes, after one unmeasured run that leaves
the bytecode cached. When that is slow, `python -X importtime` over the same command line says
where the time goes: the chain of imports that holds most of it, and the first module outside
`durable_recall` on that chain (the one to make lazy).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ('CliStart', 'CliTiming', 'measure_cli_start')

_ENTRY = 'import sys; from durable_recall.cli import main; sys.exit(main(sys.argv[1:]))'
"""What the console script runs, for `-X importtime` (which needs the interpreter's command line)."""

_OURS = 'durable_recall'


@dataclass
class CliTiming:
    """Wall times of one command line, each in a fresh process."""

    label: str
    samples: list[float] = field(default_factory=list[float])

    @property
    def median(self) -> float:
        """The median wall time in seconds."""
        return statistics.median(self.samples)


@dataclass
class CliStart:
    """The commands timed, and where `conversations --store`'s import time goes.

    Attributes:
        commands: `--help`, then `conversations --store`.
        imports: Import time of the whole command (its top-level imports together, some made lazily), seconds.
        chain: From the heaviest top-level import down, each time to the child import holding at least half of its
            parent's time: `(module, cumulative seconds)`.
        dominant: The first module on the chain outside `durable_recall`, and its cumulative seconds.
    """

    commands: list[CliTiming]
    imports: float = 0.0
    chain: list[tuple[str, float]] = field(default_factory=list[tuple[str, float]])
    dominant: tuple[str, float] | None = None

    def reason(self) -> str:
        """Why the command is slow to start, from the measured import times."""
        if not self.chain:
            return 'python -X importtime printed nothing to attribute the time to'
        slowest = max(command.median for command in self.commands)
        text = (
            f'python -X importtime counts {self.imports * 1000:,.0f} ms of imports'
            f' (the slower command takes {slowest * 1000:,.0f} ms, median)'
        )
        if self.dominant is None:
            return text + f'; the heaviest chain: {_chain(self.chain)}'
        name, seconds = self.dominant
        names = [module for module, _ in self.chain]
        where = names.index(name)
        text += f'; `{name}` dominates ({seconds * 1000:,.0f} ms)'
        if where:
            text += f', imported through {" > ".join(names[:where])}'
        if where + 1 < len(self.chain):
            text += f'; inside it {_chain(self.chain[where + 1 :])}'
        return text


def _chain(links: list[tuple[str, float]]) -> str:
    return ' > '.join(f'{module} {seconds * 1000:,.0f} ms' for module, seconds in links)


def measure_cli_start(store: str | Path, *, samples: int = 5) -> CliStart:
    """Time `--help` and `conversations --store STORE` in fresh processes; attribute the import time."""
    command = _command()
    timings = [CliTiming('durable-recall --help'), CliTiming('durable-recall conversations --store FILE')]
    lines = [[*command, '--help'], [*command, 'conversations', '--store', str(store)]]
    env = _env()
    for argv in lines:
        subprocess.run(argv, env=env, capture_output=True, check=True)
    for _ in range(samples):
        for timing, argv in zip(timings, lines, strict=True):
            began = time.perf_counter()
            subprocess.run(argv, env=env, capture_output=True, check=True)
            timing.samples.append(time.perf_counter() - began)
    done = subprocess.run(
        [sys.executable, '-X', 'importtime', '-c', _ENTRY, 'conversations', '--store', str(store)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    start = CliStart(commands=timings)
    roots = _import_tree(done.stderr)
    if roots:
        node = max(roots, key=lambda root: root.cumulative)
        start.imports = sum(root.cumulative for root in roots)
        start.chain.append((node.name, node.cumulative))
        while node.children:
            child = max(node.children, key=lambda each: each.cumulative)
            if child.cumulative < node.cumulative / 2:
                break
            node = child
            start.chain.append((node.name, node.cumulative))
        start.dominant = next(((name, s) for name, s in start.chain if name.split('.')[0] != _OURS), None)
    return start


def _command() -> list[str]:
    """The installed console script next to this interpreter, as a user runs it; else `python -m`."""
    script = Path(sys.executable).parent / 'durable-recall'
    return [str(script)] if script.exists() else [sys.executable, '-m', _OURS]


def _env() -> dict[str, str]:
    # As in `run_json`: a user's processes read cached bytecode; some machines turn writing it off.
    env = dict(os.environ)
    env.pop('PYTHONDONTWRITEBYTECODE', None)
    return env


@dataclass
class _Import:
    name: str
    cumulative: float
    children: list[_Import]


def _import_tree(stderr: str) -> list[_Import]:
    """The top-level imports of `-X importtime` output, each with its children.

    A module's line follows its children's, indented two spaces deeper per level.
    """
    pending: dict[int, list[_Import]] = {}
    for line in stderr.splitlines():
        if not line.startswith('import time:'):
            continue
        fields = line[len('import time:') :].split('|')
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue
        name = fields[2].rstrip()
        level = (len(name) - len(name.lstrip())) // 2
        node = _Import(name.strip(), int(fields[1]) / 1e6, pending.pop(level + 1, []))
        pending.setdefault(level, []).append(node)
    return pending.get(0, [])
