"""Conversation search: the history record -> index -> ranking -> excerpt -> tool answer steps.

Text in, numbers and strings out, with no I/O: `tokenize` defines a term, `index_text` what of a
message is searchable, `rank` (with `idf` and `score_term`) scores documents by BM25, and
`display_lines` with `clip` shows the model a match. The index, the sources and the tool build on
these, so every engine (in memory, SQLite, Postgres) ranks and renders identically.
"""

from __future__ import annotations

from ..compaction._artifacts import (
    HARNESS_LEGACY_SUMMARY_PREFIX,
    HARNESS_RECEIPT_TAG,
    HARNESS_SUMMARY_KEY,
    is_compaction_receipt,
    is_summary_artifact,
)
from ._bm25 import Bm25Params, idf, rank, score_term, term_frequencies
from ._capability import ConversationSearch
from ._clip import ELLIPSIS, clip
from ._render import (
    DEFAULT_SKIP_TOOLS,
    NO_TEXT,
    SEARCH_TOOL_NAME,
    SHORT_LIMIT,
    TEXT_LIMIT,
    display_lines,
    index_text,
    is_indexable,
)
from ._searcher import Order, SearchRequest, SearchScope
from ._tokenize import Token, iter_tokens, tokenize
from ._toolset import tool_description

__all__ = (
    'DEFAULT_SKIP_TOOLS',
    'ELLIPSIS',
    'HARNESS_LEGACY_SUMMARY_PREFIX',
    'HARNESS_RECEIPT_TAG',
    'HARNESS_SUMMARY_KEY',
    'NO_TEXT',
    'SEARCH_TOOL_NAME',
    'SHORT_LIMIT',
    'TEXT_LIMIT',
    'Bm25Params',
    'ConversationSearch',
    'Order',
    'SearchRequest',
    'SearchScope',
    'Token',
    'clip',
    'display_lines',
    'idf',
    'index_text',
    'is_compaction_receipt',
    'is_indexable',
    'is_summary_artifact',
    'iter_tokens',
    'rank',
    'score_term',
    'term_frequencies',
    'tokenize',
    'tool_description',
)
