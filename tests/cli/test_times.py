"""`--since` / `--until`: a time without a zone is UTC (as every time shown is); out-of-range times are usage errors."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from ._support import SUPPORT, Populated, run_cli


@pytest.fixture
def los_angeles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone is eight hours behind UTC."""
    monkeypatch.setenv('TZ', 'America/Los_Angeles')
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _first_match_time(populated: Populated, capsys: pytest.CaptureFixture[str]) -> datetime:
    found = run_cli(capsys, ['search', '--store', populated.store, '--conversation', SUPPORT, 'VPC', '--json'])
    assert found.status == 0
    return datetime.fromisoformat(json.loads(found.out)['matches'][0]['timestamp'])


def test_a_time_without_a_zone_is_utc(
    populated: Populated, capsys: pytest.CaptureFixture[str], los_angeles: None
) -> None:
    said = _first_match_time(populated, capsys)
    before = (said - timedelta(minutes=1)).strftime('%Y-%m-%dT%H:%M')  # no zone: UTC, like the time shown
    after = (said + timedelta(minutes=1)).strftime('%Y-%m-%dT%H:%M')
    base = ['search', '--store', populated.store, '--conversation', SUPPORT, 'VPC']
    found = run_cli(capsys, [*base, '--since', before])
    assert found.status == 0 and 'VPC' in found.out and not found.out.startswith('No matches')
    assert run_cli(capsys, [*base, '--since', after]).out.startswith('No matches')
    assert run_cli(capsys, [*base, '--until', before]).out.startswith('No matches')
    assert not run_cli(capsys, [*base, '--until', after]).out.startswith('No matches')
    # The same instant with an explicit zone agrees.
    assert run_cli(capsys, [*base, '--since', before + 'Z']).out == found.out


def test_help_says_times_without_a_zone_are_utc(capsys: pytest.CaptureFixture[str]) -> None:
    shown = run_cli(capsys, ['search', '--help'])
    assert shown.status == 0
    flat = ' '.join(shown.out.split())
    assert 'a time without a zone is UTC' in flat


@pytest.mark.parametrize(
    'value', ['9999-12-31T23:59:59-05:00', '0001-01-01T00:00:00+05:00', '9999-12-31T23:59:59.999999-00:01']
)
@pytest.mark.parametrize('flag', ['--since', '--until'])
def test_out_of_range_times_are_usage_errors(
    populated: Populated, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    result = run_cli(capsys, ['search', '--store', populated.store, '--all', 'export', flag, value])
    assert result.status == 2 and result.out == ''
    assert result.err.startswith(f'durable-recall: error: {flag} {value!r} is out of range')
    assert 'unexpected' not in result.err


@pytest.mark.parametrize('value', ['0001-01-01', '9999-12-31T23:59:59'])
def test_the_edges_of_utc_are_accepted(populated: Populated, capsys: pytest.CaptureFixture[str], value: str) -> None:
    result = run_cli(capsys, ['search', '--store', populated.store, '--all', 'export', '--since', value])
    assert result.status == 0 and result.err == ''
