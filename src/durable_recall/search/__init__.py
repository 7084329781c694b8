"""Search layer: one engine from a tool call to its answer, the toolset and the capability.

A request is checked and scoped, the scope's index is caught up with its history, BM25 ranks the
postings, and only the windows the answer shows are read back and rendered. The CLI's
`durable-recall search` runs the same engine.
"""

from __future__ import annotations

from ..base import warm_codec
from ..text import ENGLISH_STOPWORDS
from ._auto_recall import RECALL_KIND, AutoRecall
from ._capability import ConversationSearch
from ._engine import SearchEngine
from ._hits import Candidate, Hit
from ._outcome import Outcome
from ._request import ORDERS, Order, SearchRequest, SearchScope
from ._snapshot_source import SnapshotHistorySource
from ._toolset import tool_description
from ._update import check_embedding, embed_indexed, embed_scope, update_index

# Messages are encoded and decoded from this layer's first call on: build pydantic-ai's message
# adapter now, with the rest of a worker's startup, not in its first search or save.
warm_codec()

__all__ = (
    'ENGLISH_STOPWORDS',
    'ORDERS',
    'RECALL_KIND',
    'AutoRecall',
    'Candidate',
    'ConversationSearch',
    'Hit',
    'Order',
    'Outcome',
    'SearchEngine',
    'SearchRequest',
    'SearchScope',
    'SnapshotHistorySource',
    'check_embedding',
    'embed_indexed',
    'embed_scope',
    'tool_description',
    'update_index',
)
