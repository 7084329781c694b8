"""History: the store -> history record step of the data path (what search reads)."""

from __future__ import annotations

from ._source import HistorySource, RunHistory

__all__ = ('HistorySource', 'RunHistory')
