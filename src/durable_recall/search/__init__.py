"""Search layer: one engine from a tool call to its answer, the toolset and the capability.

A request is checked and scoped, the scope's index is caught up with its snapshots, BM25 ranks
the postings, and only the windows the answer shows are read back and rendered.
"""

from __future__ import annotations

from ._capability import ConversationSearch
from ._corpus import Hit
from ._searcher import Order, Outcome, Searcher, SearchRequest, SearchScope
from ._snapshot_source import SnapshotHistorySource
from ._toolset import tool_description

__all__ = (
    'ConversationSearch',
    'Hit',
    'Order',
    'Outcome',
    'SearchRequest',
    'SearchScope',
    'Searcher',
    'SnapshotHistorySource',
    'tool_description',
)
