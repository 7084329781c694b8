"""The compaction benchmark at a tiny size (ours only): its loop, its figures and its report keep working.

No timing is asserted. What is checked is what the benchmark's table claims about our side: the
window bounds every view, the task's prompt is in every request, no tool return goes out without
its call, and the run's own search brings step 1's detail back verbatim; with clearing, step 1's
result is cleared in the view and one search with the placeholder's query brings it back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks._compaction_loop import DETAIL, DETAIL_QUERY
from benchmarks.compaction import KEEP_MESSAGES, KEEP_RESULTS, MAX_MESSAGES, MAX_RESULTS, SIDES, main, run_ours

from durable_recall import SlidingWindowCompaction, ToolResultClearing

pytestmark = pytest.mark.anyio

STEPS = 30


async def test_the_window_bounds_every_view_and_the_run_recalls_step_1(tmp_path: Path) -> None:
    window = SlidingWindowCompaction(max_messages=MAX_MESSAGES, keep_messages=KEEP_MESSAGES)
    figures = await run_ours(STEPS, window, tmp_path / 'window.db')
    assert figures.requests == STEPS + 2  # the steps, the search, the answer
    assert figures.peak_messages <= MAX_MESSAGES + 1  # one step past the trigger at most
    assert figures.requests_without_task == 0
    assert figures.orphan_returns == 0
    assert 1 <= figures.cache_misses <= 3, 'one cut per ~20 new messages, not one per request'
    assert figures.recall_query == DETAIL_QUERY
    assert figures.recall_verbatim, f'the search answer must hold {DETAIL!r}'
    assert 0 < figures.peak_loop_tokens <= figures.peak_tokens


async def test_clearing_names_the_query_that_brings_a_cleared_result_back(tmp_path: Path) -> None:
    clearing = ToolResultClearing(max_results=MAX_RESULTS, keep_results=KEEP_RESULTS)
    figures = await run_ours(STEPS, clearing, tmp_path / 'clearing.db')
    assert figures.step1_cleared
    assert figures.recall_query != DETAIL_QUERY
    assert figures.recall_verbatim, 'one search with the placeholder query brings step 1 back'
    assert figures.peak_messages == 2 * STEPS + 3  # clearing keeps every message, only shrinks results
    assert figures.requests_without_task == 0
    assert figures.orphan_returns == 0


def test_the_report_prints_and_writes_every_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / 'compaction.json'
    main(['--steps', str(STEPS), '--repeat', '1', '--no-reference', '--json', str(out)])
    printed = capsys.readouterr().out
    for row in ('peak messages in one request', 'requests whose history head changed', 'recall of step 1'):
        assert row in printed
    document = json.loads(out.read_text())
    assert [side['label'] for side in document['sides']] == list(SIDES)
    assert all(run['recall_verbatim'] for side in document['sides'] for run in side['runs'])
