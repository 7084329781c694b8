"""Running a coroutine that never suspends, to completion, from synchronous code.

The index's write algorithm ([`apply_commits`][durable_recall.index.apply_commits]) is async so
that Postgres can await its connection. SQLite runs its transactions synchronously in a worker
thread, and the in-memory store must apply a batch with no suspension point (that is what makes
it atomic there); both implement the port with coroutines that never await anything that
suspends, and drive the algorithm here, with no event loop.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar, cast

__all__ = ('run_inline',)

_T = TypeVar('_T')


def run_inline(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run `coroutine` to completion in this thread and return its result.

    Raises:
        RuntimeError: The coroutine suspended (awaited something that needs an event loop); it
            is closed first, so nothing after that point runs.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(_T, done.value)
    coroutine.close()
    raise RuntimeError('run_inline: the coroutine suspended, but it must complete without an event loop')
