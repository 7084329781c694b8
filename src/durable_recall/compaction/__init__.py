"""Compaction: the context-window side of recall (what the live history drops, the store keeps)."""

from __future__ import annotations

from ._sliding_window import (
    COMPACTION_MARKER_KEY,
    SlidingWindowCompaction,
    compaction_marker_count,
    has_compaction_marker,
    is_compaction_marker,
    is_marker_part,
    without_marker,
)

__all__ = (
    'COMPACTION_MARKER_KEY',
    'SlidingWindowCompaction',
    'compaction_marker_count',
    'has_compaction_marker',
    'is_compaction_marker',
    'is_marker_part',
    'without_marker',
)
