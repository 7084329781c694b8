"""How a block shows a message's time, and that keeping it per moment changes nothing."""

from __future__ import annotations

import math

import pytest

from durable_recall.search._answer import said_at


@pytest.mark.parametrize(
    ('moment', 'text'),
    [
        (0.0, '1970-01-01 00:00 UTC'),
        (1767605159.999, '2026-01-05 09:25 UTC'),
        (-61.5, '1969-12-31 23:58 UTC'),
        (1e20, 'time unknown'),
        (math.inf, 'time unknown'),
        (math.nan, 'time unknown'),
    ],
)
def test_said_at(moment: float, text: str) -> None:
    assert said_at(moment) == text
    assert said_at(moment) == text  # again, from what was kept
