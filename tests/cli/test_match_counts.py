"""`search`: "N of M matches", M counted apart from --context-lines, --max-matches and what is shown; JSON too."""

from __future__ import annotations

import json
import re

import pytest

from ._support import SUPPORT, Populated, run_cli

QUERY = 'export'


def header(populated: Populated, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, int]:
    result = run_cli(capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, QUERY, *flags])
    assert result.status == 0
    found = re.match(r'(\d+) of (\d+) match(?:es)? for ', result.out)
    assert found is not None, result.out.splitlines()[0]
    return int(found.group(1)), int(found.group(2))


def test_the_total_does_not_depend_on_context_lines(populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
    counts = {lines: header(populated, capsys, '--context-lines', str(lines)) for lines in (0, 1, 2, 3, 5)}
    totals = {total for _, total in counts.values()}
    assert len(totals) == 1, counts
    [total] = totals
    assert total >= 3
    # Wider windows show more of the matches inside fewer blocks; without context every match is its own block.
    assert counts[0] == (total, total)
    assert all(shown <= total for shown, _ in counts.values())


def test_max_matches_shows_fewer_of_the_same_total(populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
    _, total = header(populated, capsys, '--context-lines', '0')
    assert header(populated, capsys, '--max-matches', '1') == (1, total)
    assert total > 1  # `1 match` would have hidden the others


def test_json_has_the_total_and_the_shown_list(populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
    _, total = header(populated, capsys)
    for flags in (['--max-matches', '1'], ['--context-lines', '5'], ['--context-lines', '0']):
        result = run_cli(
            capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, QUERY, '--json', *flags]
        )
        document = json.loads(result.out)
        shown, _ = header(populated, capsys, *flags)
        assert document['total_matches'] == total
        assert document['shown_matches'] == len(document['matches']) == shown
        assert document['answer'].startswith(f'{shown} of {total} ')


def test_no_match_counts_zero(populated: Populated, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, ['search', '--store', populated.store, '--all', 'QUAGGAXYZ', '--json'])
    document = json.loads(result.out)
    assert (document['total_matches'], document['shown_matches'], document['matches']) == (0, 0, [])
