"""Every store counts its conversations' runs as its run records say (the SQL stores in one grouped query)."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_recall.base import CorruptRunError
from durable_recall.stores import ConversationSummaries, SqliteStepStore, StepStore, summarize_conversations
from tests._services.stores import StoreKit

from ._helpers import registration

pytestmark = pytest.mark.anyio

_RUNS = [('a', 'c1'), ('b', 'c2'), ('c', 'c1'), ('d', None), ('e', 'c1'), ('f', ''), ('g', 'c2')]


async def _summaries(store: StepStore) -> tuple[dict[str, tuple[int, object, object]], int]:
    assert isinstance(store, ConversationSummaries)
    rows, loose = await store.conversation_summaries()
    return {row.conversation_id: (row.runs, row.first_started_at, row.last_started_at) for row in rows}, loose


async def test_summaries_agree_with_the_run_records(store: StepStore) -> None:
    assert await _summaries(store) == ({}, 0)
    for run_id, conversation_id in _RUNS:
        await store.register_run(registration(run_id, conversation_id=conversation_id))

    found = await _summaries(store)

    records = await store.list_runs()
    starts = {record.run_id: record.started_at for record in records}
    assert found == (
        {
            'c1': (3, starts['a'], starts['e']),
            'c2': (2, starts['b'], starts['g']),
        },
        2,  # no conversation id, or an empty one
    )
    rows, loose = summarize_conversations(records)
    assert (
        {row.conversation_id: (row.runs, row.first_started_at, row.last_started_at) for row in rows},
        loose,
    ) == found


async def test_a_start_time_sqlite_cannot_count_is_read_from_the_runs(tmp_path: Path) -> None:
    # Postgres types its start times (TIMESTAMPTZ): only SQLite can hold a mistyped one.
    path = tmp_path / 'store.db'
    store = SqliteStepStore(path)
    sql_kit = StoreKit('sqlite', store, sqlite_path=path)
    for run_id, conversation_id in _RUNS:
        await store.register_run(registration(run_id, conversation_id=conversation_id))
    expected = await _summaries(store)

    # Text a hand edit left: read back as the time it says.
    [(micros,)] = await sql_kit.query("SELECT started_at FROM {runs} WHERE run_id = 'c'")
    await sql_kit.query("UPDATE {runs} SET started_at = '2020-01-01T00:00:00.000000+00:00' WHERE run_id = 'c'")
    found, loose = await _summaries(store)
    assert loose == expected[1] and found['c2'] == expected[0]['c2']
    assert found['c1'][0] == 3 and str(found['c1'][1]).startswith('2020-01-01')

    # Text that is no time: named, as reading the run names it.
    await sql_kit.query("UPDATE {runs} SET started_at = 'yesterday' WHERE run_id = 'c'")
    with pytest.raises(CorruptRunError, match="run 'c'.*started_at"):
        await _summaries(store)

    # A number past the years a datetime holds: named too.
    await sql_kit.query("UPDATE {runs} SET started_at = ? WHERE run_id = 'c'", 2**62)
    with pytest.raises(CorruptRunError, match="run 'c'.*started_at"):
        await _summaries(store)
    await sql_kit.query("UPDATE {runs} SET started_at = ? WHERE run_id = 'c'", micros)
    assert await _summaries(store) == expected
    await store.aclose()
