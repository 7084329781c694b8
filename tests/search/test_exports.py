"""The search package's public names, pinned: the CLI and the top-level package import these."""

from __future__ import annotations

import durable_recall.search as search
import durable_recall.text as text


def test_all_is_pinned() -> None:
    assert list(search.__all__) == [
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
    ]


def test_every_name_resolves() -> None:
    for name in search.__all__:
        assert getattr(search, name) is not None


def test_limits() -> None:
    limits = (text.TEXT_LIMIT, text.SHORT_LIMIT)
    skipped = text.DEFAULT_SKIP_TOOLS
    assert limits == (500, 200)
    assert skipped == frozenset({'search_conversation_history'})
