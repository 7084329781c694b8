"""Run ids as answers show them (shortened), and a shortened id back to the run it names.

A run id is long (a UUIDv7 is 36 characters, a Temporal run's 73), and an answer names a run
at the top of each block and wherever a block crosses into another run: shown whole, ids were
a large share of an answer's bytes. An answer shows a long id's end; the model can pass what it
was shown as a search's `run_id`, and `by_short_id` finds the run among the search's scope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..index import IndexedRunRow

__all__ = ('SHORT_ID', 'by_short_id', 'short_ids')

SHORT_ID = 8
"""Characters of a long run id an answer shows (its end, after an ellipsis)."""


def short_ids(runs: Mapping[int, str]) -> dict[int, str]:
    """Each run's id as answers show it: whole up to 12 characters, else `…` and its end.

    The end, not the start: pydantic-ai's run ids are UUIDv7, whose start is a timestamp shared
    by runs close in time. Ends that two runs shown share are lengthened until they differ. A
    search's `run_id` resolves such an id (`resolve_run_id`).
    """
    names: dict[int, str] = {}
    long = {key: run_id for key, run_id in runs.items() if len(run_id) > 12}
    names.update({key: run_id for key, run_id in runs.items() if key not in long})
    size = SHORT_ID
    while long:
        ends: dict[str, list[int]] = {}
        for key, run_id in long.items():
            ends.setdefault(run_id[-size:], []).append(key)
        for end, keys in ends.items():
            if len(keys) == 1 or size >= max(len(long[key]) for key in keys):
                for key in keys:
                    names[key] = long[key] if len(long[key]) <= size else '…' + end
                    del long[key]
        size += 4
    return names


def by_short_id(rows: Sequence[IndexedRunRow], run_id: str) -> IndexedRunRow | None:
    """The one run of `rows` (the search's scope) that a shortened id or a unique prefix names.

    Answers show a long id as `…` and its end (`short_ids`); a model may pass that, the end
    alone, a prefix, or `start…end`. Only runs of the scope are candidates, so a short id never
    reaches another conversation; a short id that several runs match names none.
    """
    head, cut, tail = run_id.replace('...', '…').partition('…')
    if len(head) + len(tail) < 4:
        return None
    if cut:
        found = [row for row in rows if row.run_id.startswith(head) and row.run_id.endswith(tail)]
    else:
        found = [row for row in rows if row.run_id.startswith(run_id)]
        found = found or [row for row in rows if row.run_id.endswith(run_id)]
    return found[0] if len(found) == 1 else None
