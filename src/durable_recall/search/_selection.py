"""Which scored documents a ranking keeps: those its role and time filters pass, and the best few."""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from ..index import ROLE_NAMES
from ._request import Filters
from ._scope_cache import CachedRun

__all__ = ('best_keys', 'filtered')

_POSITION = (1 << 32) - 1


def filtered(scores: Mapping[int, float], runs: Mapping[int, CachedRun], filters: Filters) -> dict[int, float]:
    """The scores of documents (`run_key << 32 | position`) whose role and time pass `filters`.

    A document of a run not in `runs` (deleted since it was ranked) is left out.

    Raises:
        ValueError: A run's roles or times do not decode (one of `DAMAGE`; the ranker names it).
    """
    roles = {key: run.roles for key, run in runs.items()}
    times = {key: run.times for key, run in runs.items()}
    since = filters.since.timestamp() if filters.since is not None else None
    until = filters.until.timestamp() if filters.until is not None else None
    kept: dict[int, float] = {}
    for key, score in scores.items():
        run_key, position = key >> 32, key & _POSITION
        if run_key not in runs:
            continue
        if filters.roles is not None and ROLE_NAMES[roles[run_key][position]] not in filters.roles:
            continue
        moment = times[run_key][position]
        if since is not None and moment < since:
            continue
        if until is not None and moment > until:
            continue
        kept[key] = score
    return kept


def best_keys(scores: Mapping[int, float], limit: int | None) -> list[tuple[float, int]]:
    """`(-score, document)` of the best `limit` documents (all, for `None`), and of all that tie the last one.

    Whoever ties the last one may come first in corpus order, which only the runs' rows tell: the
    caller orders them, and cuts at `limit`.
    """
    if limit is None or len(scores) <= limit:
        return [(-score, key) for key, score in scores.items()]
    chosen = heapq.nsmallest(limit, ((-score, key) for key, score in scores.items()))
    boundary = chosen[-1][0]
    picked = {key for _, key in chosen}
    return chosen + [(-score, key) for key, score in scores.items() if -score == boundary and key not in picked]
