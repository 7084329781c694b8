"""The package's public names, pinned: the index, the sources and the tool import these."""

from __future__ import annotations

import durable_recall.search as search


def test_all_is_pinned() -> None:
    assert sorted(search.__all__) == [
        'Bm25Params',
        'ConversationSearch',
        'DEFAULT_SKIP_TOOLS',
        'ELLIPSIS',
        'HARNESS_LEGACY_SUMMARY_PREFIX',
        'HARNESS_RECEIPT_TAG',
        'HARNESS_SUMMARY_KEY',
        'NO_TEXT',
        'Order',
        'SEARCH_TOOL_NAME',
        'SHORT_LIMIT',
        'SearchRequest',
        'SearchScope',
        'TEXT_LIMIT',
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
    ]


def test_every_name_resolves() -> None:
    for name in search.__all__:
        assert getattr(search, name) is not None


def test_limits() -> None:
    limits = (search.TEXT_LIMIT, search.SHORT_LIMIT)
    skipped = search.DEFAULT_SKIP_TOOLS
    assert limits == (500, 200)
    assert skipped == frozenset({'search_conversation_history'})
