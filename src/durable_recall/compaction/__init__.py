"""Compaction: the context-window side of recall (what the live history drops, the store keeps).

The marker helpers are defined in the text layer (indexing and the record rebuild recognise
markers) and re-exported here, where an application looks for them.
"""

from __future__ import annotations

from ..text import (
    COMPACTION_MARKER_KEY,
    compaction_marker_count,
    has_compaction_marker,
    is_compaction_marker,
    is_marker_part,
    without_marker,
)
from ._sliding_window import SlidingWindowCompaction

__all__ = (
    'COMPACTION_MARKER_KEY',
    'SlidingWindowCompaction',
    'compaction_marker_count',
    'has_compaction_marker',
    'is_compaction_marker',
    'is_marker_part',
    'without_marker',
)
