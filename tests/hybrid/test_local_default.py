"""The local default (all-MiniLM-L6-v2 from `durable-recall[semantic]`): offline, and it finds a paraphrase.

The model loads once per process (`local_embedder`), so these few tests share one load.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from durable_recall import ConversationSearch, SnapshotHistorySource, SqliteStepStore

from ..search._stub import context, request
from ._kit import EXCHANGES, chat, needs_semantic

pytestmark = [pytest.mark.anyio, needs_semantic]

CHAT = [
    *EXCHANGES,
    ('the build server needs a new certificate', 'I will renew it'),
    ('lunch was a sandwich at my desk', 'sounds quick'),
    ('my sister moved to Lisbon in March', 'exciting news'),
]


async def test_the_local_default_finds_a_paraphrase_bm25_misses(tmp_path: Path) -> None:
    store = SqliteStepStore(tmp_path / 'store.db')
    try:
        await chat(store, CHAT)
        source = SnapshotHistorySource(store)
        question = 'dog'
        lexical = await ConversationSearch(source, scope='conversation', context_lines=0).search(
            context(), request(question)
        )
        assert 'Biscuit' not in lexical and 'No matches' in lexical
        tool = ConversationSearch(source, scope='conversation', context_lines=0, ranking='hybrid')
        answer = await tool.search(context(), request(question))
        first = answer.split('\n\n---\n\n')[0]
        assert 'puppy named Biscuit' in first
        # Stored under the model's own name (not where this host installed it), 384 dimensions.
        with closing(sqlite3.connect(tmp_path / 'store.db')) as conn:
            models = conn.execute('SELECT model, dim, COUNT(*) FROM dr_vectors GROUP BY model, dim').fetchall()
        assert models == [('sentence-transformers:sentence-transformers/all-MiniLM-L6-v2:384', 384, len(CHAT))]
    finally:
        await store.aclose()
