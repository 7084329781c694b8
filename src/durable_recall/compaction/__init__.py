"""Compaction: the context-window side of recall (what the live history drops, the store keeps).

Two strategies, both pure (deterministic in workflow code) and both paired with `StepPersistence`,
which snapshots every step before they run, and `ConversationSearch`, which finds what they took
out: `SlidingWindowCompaction` drops the oldest messages, `ToolResultClearing` blanks the content
of old tool results in place. With pydantic-ai 2.78+ both also answer core's compaction protocol
(the `compact_history` hook), writing a `CompactionPart` that says what moved out of view and that
the search tool recalls it (`_summary`).

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
from ._clearing import ToolResultClearing
from ._placeholder import CLEARED_RESULT_KEY
from ._sliding_window import SlidingWindowCompaction

__all__ = (
    'CLEARED_RESULT_KEY',
    'COMPACTION_MARKER_KEY',
    'SlidingWindowCompaction',
    'ToolResultClearing',
    'compaction_marker_count',
    'has_compaction_marker',
    'is_compaction_marker',
    'is_marker_part',
    'without_marker',
)
