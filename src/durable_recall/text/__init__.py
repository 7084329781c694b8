"""Text layer (the analyzer): what of a message is indexed and shown, its role, and what a term is.

`tokenize` defines a term (words found, normalised, then analysed: stemmed, accents folded);
`index_text` what of a message is searchable; `display_lines` with
`clip` how a match is shown, `SkipTools` which tool calls and returns it withholds (by their
`ui_visibility`); `message_role` the role the tool filters by. The compaction artifacts
that indexing and the record rebuild leave out (the sliding window's marker, the harness's
summaries and receipts) are recognised here, below both.

The modules import pydantic-ai's message classes inside the functions that look at a message, not
at import: a command that only reads a store's rows (`durable-recall conversations`) imports this
layer with the store and must not pay pydantic-ai's import (most of a second) for it.
"""

from __future__ import annotations

from .._vocabulary import SEARCH_TOOL_NAME
from ._analyzer import ANALYZER_NAME, ANALYZERS, DEFAULT_ANALYZER, analyzer_name
from ._artifacts import (
    HARNESS_LEGACY_SUMMARY_PREFIX,
    HARNESS_RECEIPT_TAG,
    HARNESS_SUMMARY_KEY,
    is_compaction_receipt,
    is_summary_artifact,
)
from ._calls import answered_call_id
from ._capability import OWN_NAMESPACE
from ._clip import ELLIPSIS, clip
from ._markers import (
    COMPACTION_MARKER_KEY,
    compaction_marker_count,
    has_compaction_marker,
    is_compaction_marker,
    is_marker_part,
    marker_request,
    without_marker,
)
from ._render import DEFAULT_SKIP_TOOLS, NO_TEXT, SHORT_LIMIT, TEXT_LIMIT, display_lines, index_text
from ._roles import ROLES, Role, message_role, message_time
from ._stopwords import ENGLISH_STOPWORDS, check_stopwords, stop_terms
from ._stored import Prepared, prepare_stored, stored_lines
from ._tokenize import Token, iter_tokens, tokenize
from ._visibility import HIDDEN_VISIBILITIES, WITHHELD, SkipTools, Visibility, withholds

__all__ = (
    'ENGLISH_STOPWORDS',
    'check_stopwords',
    'stop_terms',
    'OWN_NAMESPACE',
    'ANALYZERS',
    'ANALYZER_NAME',
    'DEFAULT_ANALYZER',
    'COMPACTION_MARKER_KEY',
    'DEFAULT_SKIP_TOOLS',
    'ELLIPSIS',
    'HARNESS_LEGACY_SUMMARY_PREFIX',
    'HARNESS_RECEIPT_TAG',
    'HARNESS_SUMMARY_KEY',
    'HIDDEN_VISIBILITIES',
    'NO_TEXT',
    'Prepared',
    'ROLES',
    'SEARCH_TOOL_NAME',
    'SHORT_LIMIT',
    'SkipTools',
    'TEXT_LIMIT',
    'Role',
    'Token',
    'Visibility',
    'WITHHELD',
    'analyzer_name',
    'answered_call_id',
    'clip',
    'compaction_marker_count',
    'display_lines',
    'has_compaction_marker',
    'index_text',
    'is_compaction_marker',
    'is_compaction_receipt',
    'is_marker_part',
    'is_summary_artifact',
    'iter_tokens',
    'marker_request',
    'prepare_stored',
    'message_role',
    'message_time',
    'stored_lines',
    'tokenize',
    'without_marker',
    'withholds',
)
